/** Token scopes: parsing and the one decision function (wire/admin/scopes.ts), over a table. */
import { describe, expect, it } from "vitest";
import { ScopeError, decide, matchPattern, mayUse, parseScope, parseScopes, type Operation, type Resource } from "../../wire/admin/scopes";

describe("matchPattern (NATS-style: * one token, > the rest)", () => {
  it.each([
    ["orders", "orders", true], ["orders", "orders.eu", false], ["orders.*", "orders.eu", true], ["orders.*", "orders", false],
    ["orders.*", "orders.eu.x", false], ["orders.>", "orders.eu.x", true], ["orders.>", "orders", false], [">", "a", true],
    [">", "a.b.c", true], ["*.inbox", "agent7.inbox", true], ["*.inbox", "inbox", false], ["*", "a.b", false],
    ["task.*.done", "task.42.done", true], ["task.*.done", "task.42.open", false],
  ])("%s ~ %s → %s", (p, name, ok) => expect(matchPattern(p.split("."), name)).toBe(ok));
});

describe("parseScope", () => {
  it("reads operation, name and group patterns", () => {
    expect(parseScope("mq9.send:orders.*")).toMatchObject({ op: "mq9.send", name: ["orders", "*"], group: null });
    expect(parseScope("mortar.consume:orders/billing")).toMatchObject({ op: "mortar.consume", name: ["orders"], group: ["billing"] });
    expect(parseScope("mortar.publish:a/b")).toMatchObject({ name: ["a/b"], group: null }); // publish has no group: "/" is part of the topic
    expect(parseScope(" mq9.* ")).toMatchObject({ text: "mq9.*", op: "mq9.*", name: null });
    expect(parseScope("*:secret.>")).toMatchObject({ op: "*", name: ["secret", ">"], group: null });
  });

  it.each([
    ["", /must not be empty/], ["mq9.sned:x", /unknown operation "mq9.sned"/], ["kafka.*", /unknown operation/],
    ["mq9.send:", /empty resource/], ["mq9.send:a..b", /empty token/], ["mq9.send:>.a", /must be the last/],
    ["mq9.send:or*", /whole tokens/], ["usage.read:x", /acts on no topic or mailbox/], ["mortar.consume:orders/", /empty group/],
  ])("refuses %j", (text, why) => {
    expect(() => parseScope(text)).toThrow(ScopeError);
    expect(() => parseScope(text)).toThrow(why);
  });

  it("bounds the count", () => {
    expect(() => parseScopes(Array.from({ length: 65 }, () => "mq9.send"))).toThrow(/at most 64/);
  });
});

const box = (name: string, group?: string): Resource => (group === undefined ? { name } : { name, group });

describe("decide", () => {
  const cases: [string, string[], string[], Operation, Resource | null, boolean][] = [
    // no scopes: today's full tenant access
    ["no scopes", [], [], "mortar.admin", box("orders"), true],
    // a partner that may only SEND to orders.inbox
    ["send-only: its inbox", ["mq9.send:orders.inbox"], [], "mq9.send", box("orders.inbox"), true],
    ["send-only: another mailbox", ["mq9.send:orders.inbox"], [], "mq9.send", box("orders.other"), false],
    ["send-only: fetch", ["mq9.send:orders.inbox"], [], "mq9.fetch", box("orders.inbox", "g"), false],
    ["send-only: create without a name", ["mq9.send:orders.inbox"], [], "mq9.create", null, false],
    // a worker that consumes group billing of topic orders
    ["consume-only: its group", ["mortar.consume:orders/billing"], [], "mortar.consume", box("orders", "billing"), true],
    ["consume-only: other group", ["mortar.consume:orders/billing"], [], "mortar.consume", box("orders", "audit"), false],
    ["consume-only: publish", ["mortar.consume:orders/billing"], [], "mortar.publish", box("orders"), false],
    ["consume-only: reset", ["mortar.consume:orders/billing"], [], "mortar.admin", box("orders", "billing"), false],
    ["consume any group", ["mortar.consume:orders"], [], "mortar.consume", box("orders", "x"), true],
    // families and wildcards
    ["family", ["mq9.*"], [], "mq9.query", box("a.b"), true],
    ["family: other family", ["mq9.*"], [], "mortar.publish", box("a"), false],
    ["star op with a prefix", ["*:team.>"], [], "agents.register", box("team.bot"), true],
    ["star op, resource-less op under a name pattern", ["*:team.>"], [], "usage.read", null, false],
    ["resource-less op", ["usage.read"], [], "usage.read", null, true],
    ["create without a name needs a name-less scope", ["mq9.create"], [], "mq9.create", null, true],
    // deny wins
    ["deny wins over allow", ["mq9.*"], ["mq9.*:secret.*"], "mq9.fetch", box("secret.plans", "g"), false],
    ["deny leaves the rest", ["mq9.*"], ["mq9.*:secret.*"], "mq9.fetch", box("public.plans", "g"), true],
    ["deny-only: everything else allowed", [], ["mortar.admin"], "mortar.publish", box("orders"), true],
    ["deny-only: the denied op", [], ["mortar.admin"], "mortar.admin", box("orders"), false],
    // groups of mq9
    ["fetch group pattern", ["mq9.fetch:agent.*/workers"], [], "mq9.fetch", box("agent.7", "workers"), true],
    ["fetch other group", ["mq9.fetch:agent.*/workers"], [], "mq9.fetch", box("agent.7", "spies"), false],
    ["fetch without a group vs a group pattern", ["mq9.fetch:agent.*/workers"], [], "mq9.fetch", box("agent.7"), false],
  ];
  it.each(cases)("%s", (_name, allow, deny, op, r, allowed) => {
    expect(decide(parseScopes(allow, deny), op, r).allowed).toBe(allowed);
  });

  it("names the operation, the resource and the rule in a refusal", () => {
    expect(decide(parseScopes(["mq9.*"], ["mq9.*:secret.*"]), "mq9.send", box("secret.x"))).toEqual({ allowed: false, reason: 'permission denied: mq9.send on secret.x (denied by "mq9.*:secret.*")' });
    expect(decide(parseScopes(["mq9.send:a"]), "mortar.consume", box("orders", "billing"))).toEqual({ allowed: false, reason: "permission denied: mortar.consume on orders/billing (no scope of the token allows it)" });
    expect(decide(null, "usage.read", null)).toEqual({ allowed: true });
  });
});

describe("mayUse (the console hides what a token cannot use)", () => {
  const who = (allow: string[], deny: string[] = []) => ({ allow, deny });
  it.each<[string[], string[], Operation, Resource | "any", boolean]>([
    [[], [], "mortar.admin", "any", true],
    [["mortar.publish:shop.>"], [], "mortar.admin", "any", false],
    [["mortar.admin:shop.>"], [], "mortar.admin", "any", true],
    [["mortar.*"], ["mortar.admin"], "mortar.admin", "any", false],
    [["mortar.*"], ["mortar.admin:x"], "mortar.admin", "any", true],
    [["mortar.consume:orders/billing"], [], "mortar.consume", { name: "orders" }, true], // any group
    [["mortar.consume:orders/billing"], [], "mortar.admin", { name: "orders", group: "billing" }, false],
    [["mortar.*"], ["mortar.consume:orders/audit"], "mortar.consume", { name: "orders" }, true],
    [["mq9.send:box.a"], [], "mq9.send", { name: "box.a" }, true],
    [["mq9.send:box.a"], [], "mq9.query", { name: "box.a" }, false],
    [["mq9.send:a..b"], [], "mq9.send", { name: "a" }, false], // an unparsable scope is ignored (the token has no usable scope left)
  ])("allow %j deny %j: %s on %j → %s", (allow, deny, op, r, ok) => expect(mayUse(who(allow, deny), op, r)).toBe(ok));
});

describe("decide memo", () => {
  it("answers a repeated question the same, and a new parse of changed scopes afresh", () => {
    const before = parseScopes(["mortar.publish:orders"]);
    expect(decide(before, "mortar.publish", { name: "orders" })).toEqual({ allowed: true });
    expect(decide(before, "mortar.publish", { name: "orders" })).toEqual({ allowed: true });
    expect(decide(before, "mortar.publish", { name: "orders.eu" }).allowed).toBe(false);
    expect(decide(before, "mortar.consume", { name: "orders", group: "g" }).allowed).toBe(false);
    const after = parseScopes(["mortar.consume:orders/g"], ["mortar.publish"]);
    expect(decide(after, "mortar.publish", { name: "orders" })).toEqual({ allowed: false, reason: 'permission denied: mortar.publish on orders (denied by "mortar.publish")' });
    expect(decide(after, "mortar.consume", { name: "orders", group: "g" })).toEqual({ allowed: true });
    for (let i = 0; i < 3000; i++) decide(after, "mq9.send", { name: `box.${i}` }); // past the memo's bound: still right
    expect(decide(after, "mortar.consume", { name: "orders", group: "g" })).toEqual({ allowed: true });
  });
});
