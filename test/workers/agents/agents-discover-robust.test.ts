/**
 * DISCOVER returns whatever is stored, verbatim: a card stored before the
 * nesting limit existed (or any card the runtime could not serialize again)
 * must not turn DISCOVER into a 500 for the whole tenant.
 */
import { createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";
import { agentRegistryStub } from "../../../objects/agents/stub";
import { handleMq9Request } from "../../../objects/mq9/dispatch";
import { replyJson } from "../../../objects/mq9/reply";
import { freshTenant } from "../helpers/agents";

const enc = new TextEncoder();
const DEPTH = 100_000;
/** A card nested far deeper than the REGISTER limit (64): JSON.stringify / structured clone would overflow the stack. */
const deepCard = `{"name":"deep","description":"stored before the depth limit","x":${"[".repeat(DEPTH)}1${"]".repeat(DEPTH)}}`;

async function request(tenant: string, verb: string, body: unknown) {
  return handleMq9Request(env as unknown as Env, tenant, { subject: `$mq9.AI.AGENT.${verb}`, headers: new Map(), payload: enc.encode(JSON.stringify(body)) });
}

/** Overwrites the stored card text of agent `name`, bypassing REGISTER's validation. */
async function storeRaw(tenant: string, name: string, cardJson: string): Promise<void> {
  await runInDurableObject(agentRegistryStub(env as unknown as Env, tenant), (_obj, state) => {
    state.storage.sql.exec("UPDATE agents SET card = ? WHERE name = ?", cardJson, name);
  });
}

describe("DISCOVER with unusual stored cards", () => {
  it("returns a deeply nested stored card verbatim (HTTP and dispatcher), with its REPORT spliced in", async () => {
    const t = freshTenant("deep");
    for (const name of ["before", "deep", "after"]) expect((await request(t, "REGISTER", { name })).body).toEqual({ error: "" });
    await storeRaw(t, "deep", deepCard);
    expect((await request(t, "REPORT", { name: "deep", status: "busy" })).body).toEqual({ error: "" });

    const r = await request(t, "DISCOVER", {});
    expect(r.status).toBe(200);
    const text = replyJson(r);
    expect(text.startsWith('{"error":"","agents":[{"name":"before"},{"name":"deep","description":"stored before the depth limit","x":[[[')).toBe(true);
    expect(text).toMatch(/\]\]\],"_mq9":\{"report":\{"name":"deep","status":"busy"\},"report_time":\d+\}\},\{"name":"after"\}\]\}$/);
    const parsed = JSON.parse(text) as { agents: { name: string }[] }; // JSON.parse is iterative: fine at any depth
    expect(parsed.agents.map((a) => a.name)).toEqual(["before", "deep", "after"]);

    // The real HTTP route, tenant selected by token.
    const custom = { ...(env as unknown as Env), AUTH_TOKENS: `tok:${t}` };
    const res = await app.fetch(
      new Request("http://broker/mq9/$mq9.AI.AGENT.DISCOVER", { method: "POST", body: '{"text":"deep"}', headers: { Authorization: "Bearer tok" } }),
      custom,
      createExecutionContext(),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = await res.text();
    expect(body.length).toBeGreaterThan(2 * DEPTH);
    expect((JSON.parse(body) as { agents: { name: string }[] }).agents.map((a) => a.name)).toEqual(["deep"]);
  });

  it("leaves out a stored row that is not a JSON object instead of failing the page", async () => {
    const t = freshTenant("corrupt");
    for (const name of ["ok1", "broken", "ok2"]) await request(t, "REGISTER", { name });
    await storeRaw(t, "broken", '{"name":"broken", truncated');
    const r = await request(t, "DISCOVER", {});
    expect(r.status).toBe(200);
    expect(JSON.parse(replyJson(r))).toEqual({ error: "", agents: [{ name: "ok1" }, { name: "ok2" }] });
    expect(r.body.agents).toEqual([{ name: "ok1" }, { name: "ok2" }]);
  });
});
