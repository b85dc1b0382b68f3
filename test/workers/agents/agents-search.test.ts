/**
 * DISCOVER over the 20 fixture cards with the default (built-in) embedder,
 * through the real mq9 dispatcher and the tenant's AgentRegistry object.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { AGENT_CARDS, PAYMENTS_AGENT } from "../../fixtures/agent-cards";
import { agentRequest, discoverNames, freshTenant, registerFixture } from "../helpers/agents";

describe("DISCOVER over the fixture cards", () => {
  const tenant = freshTenant("search");
  beforeAll(() => registerFixture(tenant));

  it("text: 'payment invoice' ranks the payments agent first (FTS5 BM25)", async () => {
    const names = await discoverNames(tenant, { text: "payment invoice" });
    expect(names[0]).toBe(PAYMENTS_AGENT);
    expect(names).toContain("ledger-bot"); // "tracks unpaid invoices" matches one term, ranked lower
  });

  it("text: Chinese words of one and two characters match", async () => {
    expect((await discoverNames(tenant, { text: "发票" }))[0]).toBe(PAYMENTS_AGENT);
    expect(await discoverNames(tenant, { text: "天气" })).toEqual(["天气助手"]);
    expect(await discoverNames(tenant, { text: "税" })).toEqual(["税务顾问"]);
  });

  it("text: a query with no match returns an empty page, FTS5 syntax in the query is inert", async () => {
    expect(await discoverNames(tenant, { text: "zzyzx" })).toEqual([]);
    expect(await discoverNames(tenant, { text: '"weather" NEAR( OR * -' })).toEqual(["weather-now"]);
  });

  it("text: an identifier-like query finds its card only — a lone split-off letter or number matches nothing alone", async () => {
    const t = freshTenant("ident");
    const cards = [
      { name: "jsokapic1808f89", mailbox: "mq9://broker/ident.target", description: "build worker for project jsokapic1808f89" },
      { name: "fsharp-helper", mailbox: "mq9://broker/ident.fsharp", description: "answers questions about the F language and its 89 keywords" },
      { name: "release-1808", mailbox: "mq9://broker/ident.release", description: "release notes for build 1808" },
      { name: "vitamins", mailbox: "mq9://broker/ident.vitamins", description: "vitamin f2 and b12 facts" },
    ];
    for (const card of cards) expect((await agentRequest(t, "REGISTER", card)).body.error).toBe("");
    expect(await discoverNames(t, { text: "jsokapic1808f89" })).toEqual(["jsokapic1808f89"]);
    // parts of two letters or more still match alone; the split-off parts rank below the whole word
    expect(await discoverNames(t, { text: "jsokapic" })).toEqual(["jsokapic1808f89"]);
    // a compound written apart in a card is found through the phrase of its parts, ranked above a card sharing one part
    expect(await discoverNames(t, { text: "build1808" })).toEqual(["release-1808", "jsokapic1808f89"]);
  });

  it("semantic (built-in embedder): the spec's Chinese query finds the payments agent in the top 3", async () => {
    const names = await discoverNames(tenant, { semantic: "处理付款并生成发票" });
    expect(names.slice(0, 3)).toContain(PAYMENTS_AGENT);
  });

  it("semantic (built-in embedder): an English paraphrase finds the Chinese-described payments agent in the top 3", async () => {
    const names = await discoverNames(tenant, { semantic: "collect payments and bill customers" });
    expect(names.slice(0, 3)).toContain(PAYMENTS_AGENT);
  });

  it("semantic wins over text when both are given", async () => {
    const names = await discoverNames(tenant, { semantic: "will it rain tomorrow", text: "payment invoice" });
    expect(names.slice(0, 2).sort()).toEqual(["weather-now", "天气助手"].sort());
  });

  it("list-all returns every agent in registration order, 20 per page by default", async () => {
    const names = await discoverNames(tenant, {});
    expect(names).toEqual(AGENT_CARDS.map((c) => c.name));
  });

  it("returns the raw registered cards, unwrapped", async () => {
    const r = await agentRequest(tenant, "DISCOVER", { text: "translator" });
    expect(r.status).toBe(200);
    expect(r.body.error).toBe("");
    expect(r.body.agents![0]).toEqual(AGENT_CARDS.find((c) => c.name === "translator"));
  });

  for (const [mode, extra] of [
    ["list-all", {}],
    ["text", { text: "agent translate payment weather code calendar 会议 天气 发票" }],
    ["semantic", { semantic: "payments weather translation meetings code images 招聘 股票 税" }],
  ] as const) {
    it(`pagination covers every result exactly once (${mode})`, async () => {
      const all = await discoverNames(tenant, { ...extra, limit: 100 });
      expect(all.length).toBeGreaterThan(5);
      const paged: string[] = [];
      for (let page = 1; page <= 20; page++) {
        const names = await discoverNames(tenant, { ...extra, limit: 3, page });
        expect(names.length).toBeLessThanOrEqual(3);
        if (names.length === 0) break;
        paged.push(...names);
      }
      expect(paged).toEqual(all);
      expect(new Set(paged).size).toBe(paged.length);
      if (mode === "list-all") expect(paged.sort()).toEqual(AGENT_CARDS.map((c) => c.name).sort());
    });
  }

  it("clamps limit to 100 and rejects invalid paging", async () => {
    expect((await discoverNames(tenant, { limit: 1000 })).length).toBe(20);
    expect((await agentRequest(tenant, "DISCOVER", { limit: 0 })).status).toBe(400);
    expect((await agentRequest(tenant, "DISCOVER", { page: 0 })).body.error).toMatch(/page/);
    expect((await agentRequest(tenant, "DISCOVER", { limit: 2.5 })).status).toBe(400);
    expect((await agentRequest(tenant, "DISCOVER", { text: 42 })).body.error).toMatch(/text/);
  });
});
