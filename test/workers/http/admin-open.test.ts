/**
 * The tenant admin API on an open broker (the pool's: no AUTH_TOKENS, no
 * ADMIN_TOKEN): creating a tenant or issuing a token would make something
 * that does nothing — every client is tenant `default` — so both are 409
 * with the reason (worker/admin/tenants-api.ts).
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { OPEN_BROKER_REFUSAL } from "../../../worker/admin/tenants-api";

const post = (path: string, body: unknown) =>
  SELF.fetch(`http://broker${path}`, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });

describe("tenant admin on an open broker", () => {
  it("POST /admin/tenants and POST /admin/tenants/:id/tokens are 409 and create nothing", async () => {
    const created = await post("/admin/tenants", { id: "open-acme" });
    expect({ status: created.status, body: await created.json() }).toEqual({ status: 409, body: { error: OPEN_BROKER_REFUSAL } });
    const issued = await post("/admin/tenants/default/tokens", { label: "ci" });
    expect({ status: issued.status, body: await issued.json() }).toEqual({ status: 409, body: { error: OPEN_BROKER_REFUSAL } });
    expect((await SELF.fetch("http://broker/admin/tenants/open-acme")).status).toBe(404);
    const list = (await (await SELF.fetch("http://broker/admin/tenants")).json()) as { tenants: { id: string }[] };
    expect(list.tenants.map((t) => t.id)).toEqual(["default"]);
  });
});
