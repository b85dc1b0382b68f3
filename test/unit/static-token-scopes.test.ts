/** `AUTH_TOKENS` entries with scopes (objects/tenants/auth.ts parseStaticEntries; docs/tenants.md "Permissions"). */
import { describe, expect, it } from "vitest";
import { parseStaticEntries, parseStaticTokens } from "../../objects/tenants/static-tokens";
import { decide } from "../../wire/admin/scopes";

describe("AUTH_TOKENS scopes", () => {
  it("keeps token:tenant and bare tokens, and reads allow=/deny= rules after the tenant", () => {
    const m = parseStaticEntries("plain:acme, bare ,s3:acme:allow=mq9.send:orders.*;deny=mq9.send:orders.secret;allow=agents.discover");
    expect(parseStaticTokens("plain:acme, bare ,s3:acme:allow=mq9.send:orders.*")).toEqual(new Map([["plain", "acme"], ["bare", "default"], ["s3", "acme"]]));
    expect(m.get("plain")).toEqual({ tenant: "acme" });
    const s = m.get("s3")!;
    expect([s.tenant, s.scopes!.allow.map((x) => x.text), s.scopes!.deny.map((x) => x.text)]).toEqual(["acme", ["mq9.send:orders.*", "agents.discover"], ["mq9.send:orders.secret"]]);
    expect([decide(s.scopes, "mq9.send", { name: "orders.a" }).allowed, decide(s.scopes, "mq9.send", { name: "orders.secret" }).allowed, decide(s.scopes, "mq9.fetch", { name: "orders.a" }).allowed])
      .toEqual([true, false, false]);
  });

  it("skips an entry whose scope does not parse or whose rule is not allow=/deny= (that token is refused)", () => {
    const m = parseStaticEntries("a:acme:allow=mq9.sned:x,b:acme:permit=mq9.send,c:acme");
    expect([...m.keys()]).toEqual(["c"]);
  });
});
