/**
 * REGISTER / UNREGISTER / REPORT semantics and tenant isolation, through
 * the real mq9 dispatcher (and the HTTP route) and the AgentRegistry object.
 */
import { createExecutionContext, env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";
import { agentRegistryStub } from "../../../objects/agents/stub";
import { AGENT_CARDS } from "../../fixtures/agent-cards";
import { agentRequest, discoverNames, freshTenant } from "../helpers/agents";
import { mq9 } from "../helpers/mq9";

const card = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} does things`,
  mailbox: `mq9://broker/agent.${name}.inbox`,
  ...extra,
});

describe("REGISTER", () => {
  it("answers {error:''} and the card is searchable immediately in every mode", async () => {
    const t = freshTenant();
    expect(await agentRequest(t, "REGISTER", card("hedgehog", { description: "Sorts hedgehog photos" }))).toEqual({ status: 200, body: { error: "" } });
    expect(await discoverNames(t, {})).toEqual(["hedgehog"]);
    expect(await discoverNames(t, { text: "hedgehog photos" })).toEqual(["hedgehog"]);
    expect(await discoverNames(t, { semantic: "hedgehog pictures" })).toEqual(["hedgehog"]);
  });

  it("re-REGISTER of a name replaces the card and its index entries (upsert), keeping its place", async () => {
    const t = freshTenant();
    await agentRequest(t, "REGISTER", card("alpha", { description: "Forecasts the weather" }));
    await agentRequest(t, "REGISTER", card("beta"));
    expect(await discoverNames(t, { text: "weather" })).toEqual(["alpha"]);
    expect((await agentRequest(t, "REGISTER", card("alpha", { description: "Translates documents", version: "2" }))).body).toEqual({ error: "" });
    expect(await discoverNames(t, { text: "weather" })).toEqual([]);
    expect(await discoverNames(t, { semantic: "weather forecast" })).toEqual([]);
    expect(await discoverNames(t, { text: "translates" })).toEqual(["alpha"]);
    expect((await discoverNames(t, { semantic: "translation" }))[0]).toBe("alpha");
    const all = await agentRequest(t, "DISCOVER", {});
    expect(all.body.agents).toEqual([card("alpha", { description: "Translates documents", version: "2" }), card("beta")]);
    await runInDurableObject(agentRegistryStub(env as unknown as Env, t), async (obj) => {
      expect(obj.counts()).toEqual({ agents: 2, staleVectors: 0 });
    });
  });

  it("stores the card as sent, unknown A2A fields included", async () => {
    const t = freshTenant();
    const full = AGENT_CARDS[0];
    await agentRequest(t, "REGISTER", full);
    expect((await agentRequest(t, "DISCOVER", {})).body.agents).toEqual([full]);
  });

  it("rejects invalid JSON, a missing or empty name, wrong field types and the reserved key with clear errors", async () => {
    const t = freshTenant();
    const cases: [unknown, RegExp][] = [
      ["{not json", /not valid JSON/],
      ["", /empty/],
      ["[1,2]", /JSON object/],
      [{ description: "no name" }, /name is required/],
      [{ name: "  " }, /name must not be empty/],
      [{ name: 7 }, /name/],
      [{ name: "x", skills: "translate" }, /skills/],
      [{ name: "x", skills: [{ name: "s", tags: "a,b" }] }, /skills\.0\.tags/],
      [{ name: "x", _mq9: {} }, /_mq9 is reserved/],
    ];
    for (const [body, message] of cases) {
      const r = await agentRequest(t, "REGISTER", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatch(message);
    }
    expect(await discoverNames(t, {})).toEqual([]);
  });

  it("refuses a mailbox already registered by another agent (409); same address under another host counts", async () => {
    const t = freshTenant();
    await agentRequest(t, "REGISTER", card("one", { mailbox: "mq9://broker/shared.inbox" }));
    const r = await agentRequest(t, "REGISTER", card("two", { mailbox: "mq9://other-host/shared.inbox" }));
    expect(r).toEqual({ status: 409, body: { error: "mailbox mq9://other-host/shared.inbox is already registered by agent one" } });
    expect(await discoverNames(t, {})).toEqual(["one"]);
  });
});

describe("UNREGISTER", () => {
  it("by name removes the agent from list-all, text and semantic search", async () => {
    const t = freshTenant();
    await agentRequest(t, "REGISTER", card("payer", { description: "Handles payments and invoices" }));
    await agentRequest(t, "REGISTER", card("other", { description: "Handles payments" }));
    expect(await agentRequest(t, "UNREGISTER", { name: "payer" })).toEqual({ status: 200, body: { error: "", removed: true } });
    expect(await discoverNames(t, {})).toEqual(["other"]);
    expect(await discoverNames(t, { text: "invoices" })).toEqual([]);
    expect(await discoverNames(t, { semantic: "payments and invoices" })).toEqual(["other"]);
  });

  it("by mailbox (with or without the mq9://host/ prefix)", async () => {
    const t = freshTenant();
    await agentRequest(t, "REGISTER", card("a", { mailbox: "mq9://broker/agent.a.inbox" }));
    await agentRequest(t, "REGISTER", card("b", { mailbox: "mq9://broker/agent.b.inbox" }));
    expect((await agentRequest(t, "UNREGISTER", { mailbox: "mq9://broker/agent.a.inbox" })).body).toEqual({ error: "", removed: true });
    expect((await agentRequest(t, "UNREGISTER", { mailbox: "agent.b.inbox" })).body).toEqual({ error: "", removed: true });
    expect(await discoverNames(t, {})).toEqual([]);
  });

  it("of an unknown agent succeeds with removed:false; without name or mailbox is an error", async () => {
    const t = freshTenant();
    expect(await agentRequest(t, "UNREGISTER", { name: "ghost" })).toEqual({ status: 200, body: { error: "", removed: false } });
    expect(await agentRequest(t, "UNREGISTER", { mailbox: "mq9://broker/none" })).toEqual({ status: 200, body: { error: "", removed: false } });
    const r = await agentRequest(t, "UNREGISTER", { status: "bye" });
    expect(r).toEqual({ status: 400, body: { error: "UNREGISTER needs the agent's name or mailbox" } });
  });

  it("with a name and a mailbox that belong to different agents removes nothing", async () => {
    const t = freshTenant();
    await agentRequest(t, "REGISTER", card("a"));
    const r = await agentRequest(t, "UNREGISTER", { name: "a", mailbox: "mq9://broker/agent.b.inbox" });
    expect(r.status).toBe(400);
    expect(await discoverNames(t, {})).toEqual(["a"]);
  });
});

describe("REPORT", () => {
  it("stores the latest status body with its time, shown in DISCOVER under the reserved _mq9 key", async () => {
    const t = freshTenant();
    const c = card("worker", { description: "Crunches numbers" });
    await agentRequest(t, "REGISTER", c);
    const before = Math.floor(Date.now() / 1000);
    const first = { mailbox: c.mailbox, status: "busy", load: 0.9 };
    expect(await agentRequest(t, "REPORT", first)).toEqual({ status: 200, body: { error: "" } });
    const latest = { name: "worker", status: "idle", load: 0.1 };
    expect((await agentRequest(t, "REPORT", latest)).body).toEqual({ error: "" });
    for (const req of [{}, { text: "crunches" }, { semantic: "crunch numbers" }]) {
      const agents = (await agentRequest(t, "DISCOVER", req)).body.agents!;
      expect(agents).toHaveLength(1);
      const { _mq9, ...rest } = agents[0] as { _mq9: { report: unknown; report_time: number } };
      expect(rest).toEqual(c);
      expect(_mq9.report).toEqual(latest);
      expect(_mq9.report_time).toBeGreaterThanOrEqual(before);
      expect(_mq9.report_time).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    }
    // A re-REGISTER replaces the card but keeps the latest report.
    await agentRequest(t, "REGISTER", { ...c, description: "Crunches bigger numbers" });
    const again = (await agentRequest(t, "DISCOVER", {})).body.agents![0] as { description: string; _mq9: { report: unknown } };
    expect(again.description).toBe("Crunches bigger numbers");
    expect(again._mq9.report).toEqual(latest);
  });

  it("for an unknown agent is a 404 error; without name or mailbox a 400", async () => {
    const t = freshTenant();
    expect(await agentRequest(t, "REPORT", { name: "ghost", status: "up" })).toEqual({ status: 404, body: { error: "agent ghost is not registered" } });
    expect(await agentRequest(t, "REPORT", { mailbox: "mq9://broker/x.inbox" })).toEqual({
      status: 404,
      body: { error: "agent with mailbox mq9://broker/x.inbox is not registered" },
    });
    expect((await agentRequest(t, "REPORT", { status: "up" })).status).toBe(400);
    expect((await agentRequest(t, "REPORT", "up")).status).toBe(400);
  });

  it("is removed with the agent: a later REGISTER of the name starts without a report", async () => {
    const t = freshTenant();
    await agentRequest(t, "REGISTER", card("x"));
    await agentRequest(t, "REPORT", { name: "x", status: "up" });
    await agentRequest(t, "UNREGISTER", { name: "x" });
    await agentRequest(t, "REGISTER", card("x"));
    expect((await agentRequest(t, "DISCOVER", {})).body.agents).toEqual([card("x")]);
  });
});

describe("deeply nested JSON", () => {
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

  it("a card or report nested thousands of levels deep is refused and cannot break DISCOVER for the tenant", async () => {
    const t = freshTenant("deep");
    const http = (req: Request) => Promise.resolve(app.fetch(req, { ...(env as unknown as Env), AUTH_TOKENS: `tok:${t}` }, createExecutionContext()));
    const asT = (req: Request) => {
      req.headers.set("Authorization", "Bearer tok");
      return http(req);
    };
    expect((await mq9("$mq9.AI.AGENT.REGISTER", card("plain", { description: "payments" }), {}, asT)).status).toBe(200);
    const deepCard = await mq9("$mq9.AI.AGENT.REGISTER", `{"name":"deep","description":"payments","x":${nested(10_000)}}`, {}, asT);
    expect(deepCard.status).toBe(400);
    expect(deepCard.body.error).toMatch(/nest/);
    const deepReport = await mq9("$mq9.AI.AGENT.REPORT", `{"name":"plain","status":${nested(10_000)}}`, {}, asT);
    expect(deepReport.status).toBe(400);
    expect(deepReport.body.error).toMatch(/nest/);
    for (const req of [{}, { text: "payments" }, { semantic: "payments" }]) {
      const r = await mq9("$mq9.AI.AGENT.DISCOVER", req, {}, asT);
      expect(r.status).toBe(200);
      expect((r.body.agents as { name: string }[]).map((a) => a.name)).toEqual(["plain"]);
    }
  });
});

describe("tenant isolation", () => {
  it("a tenant never discovers another tenant's agents (dispatcher)", async () => {
    const a = freshTenant("iso-a");
    const b = freshTenant("iso-b");
    await agentRequest(a, "REGISTER", card("secret-agent", { description: "payments and invoices" }));
    for (const req of [{}, { text: "payments" }, { semantic: "payments" }, { text: "secret" }]) {
      expect(await discoverNames(b, req)).toEqual([]);
      expect(await discoverNames(a, req)).toEqual(["secret-agent"]);
    }
    expect((await agentRequest(b, "UNREGISTER", { name: "secret-agent" })).body.removed).toBe(false);
    expect((await agentRequest(b, "REPORT", { name: "secret-agent" })).status).toBe(404);
    expect(await discoverNames(a, {})).toEqual(["secret-agent"]);
  });

  it("over HTTP, tokens of different tenants see different registries", async () => {
    const custom = { ...(env as unknown as Env), AUTH_TOKENS: "tok-a:agents-http-a,tok-b:agents-http-b" };
    const as = (token: string) => (req: Request) => {
      req.headers.set("Authorization", `Bearer ${token}`);
      return Promise.resolve(app.fetch(req, custom, createExecutionContext()));
    };
    const name = `http-${Date.now()}`;
    expect((await mq9("$mq9.AI.AGENT.REGISTER", card(name), {}, as("tok-a"))).body).toEqual({ error: "" });
    const inA = await mq9("$mq9.AI.AGENT.DISCOVER", { text: name }, {}, as("tok-a"));
    expect(inA.status).toBe(200);
    expect(inA.body.agents).toEqual([card(name)]);
    expect((await mq9("$mq9.AI.AGENT.DISCOVER", { text: name }, {}, as("tok-b"))).body).toEqual({ error: "", agents: [] });
  });
});

describe("POST /mq9/$mq9.AI.AGENT.*", () => {
  it("serves the spec's examples on the open broker", async () => {
    const name = `route-${Date.now()}`;
    const mailbox = `mq9://broker/agent.${name}.inbox`;
    expect(await mq9("$mq9.AI.AGENT.REGISTER", { name, description: "处理付款并生成发票", mailbox })).toEqual({ status: 200, body: { error: "" } });
    expect(await mq9("$mq9.AI.AGENT.REPORT", { mailbox, status: "online" })).toEqual({ status: 200, body: { error: "" } });
    const found = await mq9("$mq9.AI.AGENT.DISCOVER", { semantic: "处理付款并生成发票" });
    expect((found.body.agents as { name: string }[]).map((a) => a.name)).toContain(name);
    expect(await mq9("$mq9.AI.AGENT.UNREGISTER", { mailbox })).toEqual({ status: 200, body: { error: "", removed: true } });
    const res = await SELF.fetch("http://broker/mq9/$mq9.AI.AGENT.REGISTER", { method: "POST", body: "{oops" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/not valid JSON/);
  });
});
