/**
 * The Workers AI and endpoint embedders inside the real registry (AgentIndex
 * on a real AgentRegistry object's SQLite storage), against fakes of the
 * external services that return fixed vectors: the request they send, the
 * ranking they produce, re-embedding after an embedder switch, and
 * behaviour when the service fails.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { createBuiltinEmbedder } from "../../../objects/agents/embed/builtin";
import { createEndpointEmbedder } from "../../../objects/agents/embed/endpoint";
import type { Embedder } from "../../../objects/agents/embed/types";
import { createWorkersAiEmbedder, type AiBinding } from "../../../objects/agents/embed/workers-ai";
import { AgentIndex } from "../../../objects/agents/store";
import { parseDiscoverRequest, parseRegisterRequest } from "../../../wire/mq9/agent-requests";

const agents = (env as unknown as Env).AGENTS;

const enc = new TextEncoder();
const CARDS = [
  { name: "pay", description: "topic:payments" },
  { name: "sky", description: "topic:weather" },
  { name: "words", description: "topic:translation" },
];
/** Fixed 3-d vectors by topic; queries name a mix. */
const VECTORS: Record<string, number[]> = {
  "topic:payments": [1, 0, 0],
  "topic:weather": [0, 1, 0],
  "topic:translation": [0, 0, 1],
  "query:mostly-weather": [0.3, 0.9, 0.1],
  "query:pay-then-words": [0.8, 0.1, 0.5],
};
function vectorFor(text: string): number[] {
  const key = Object.keys(VECTORS).find((k) => text.includes(k));
  if (!key) throw new Error(`fake embedder: no vector for ${JSON.stringify(text)}`);
  return VECTORS[key];
}

/** A fake Workers AI binding recording its calls. */
function fakeAi(fail = { now: false }): AiBinding & { calls: { model: string; inputs: Record<string, unknown> }[] } {
  const calls: { model: string; inputs: Record<string, unknown> }[] = [];
  return {
    calls,
    async run(model, inputs) {
      calls.push({ model, inputs });
      if (fail.now) throw new Error("upstream 503");
      const texts = inputs.text as string[];
      return { shape: [texts.length, 3], data: texts.map(vectorFor), pooling: "cls" };
    },
  };
}

/** Runs `fn` with an AgentIndex using `embedder` on a fresh AgentRegistry object's storage. */
async function withIndex(embedder: Embedder, fn: (idx: AgentIndex, storage: DurableObjectStorage) => Promise<void>, name = `emb-${Date.now()}-${Math.random()}`) {
  await runInDurableObject(agents.get(agents.idFromName(name)), async (_obj, state) => {
    await fn(new AgentIndex(state.storage, embedder), state.storage);
  });
}

async function registerAll(idx: AgentIndex) {
  for (const c of CARDS) {
    const r = await idx.register(parseRegisterRequest(enc.encode(JSON.stringify(c))), Date.now());
    expect(r.ok).toBe(true);
  }
}

/** The name of a DISCOVER result card (JSON text). */
const nameOf = (card: string) => (JSON.parse(card) as { name: string }).name;

async function semanticNames(idx: AgentIndex, query: string, extra: object = {}): Promise<string[]> {
  const r = await idx.discover(parseDiscoverRequest(enc.encode(JSON.stringify({ semantic: query, ...extra }))));
  if (!r.ok) throw new Error(r.error);
  return r.agents.map(nameOf);
}

describe("Workers AI embedder (fake AI binding)", () => {
  it("sends ai.run(model, {text, truncate_inputs}) and ranks by cosine of the returned vectors", async () => {
    const ai = fakeAi();
    await withIndex(createWorkersAiEmbedder(ai), async (idx) => {
      await registerAll(idx);
      expect(ai.calls).toHaveLength(3);
      expect(ai.calls[0]).toEqual({ model: "@cf/baai/bge-m3", inputs: { text: ["pay\ntopic:payments"], truncate_inputs: true } });
      expect(await semanticNames(idx, "query:mostly-weather")).toEqual(["sky", "pay", "words"]);
      expect(ai.calls[3].inputs).toEqual({ text: ["query:mostly-weather"], truncate_inputs: true });
      expect(await semanticNames(idx, "query:pay-then-words")).toEqual(["pay", "words", "sky"]);
      expect(await semanticNames(idx, "query:pay-then-words", { limit: 1, page: 2 })).toEqual(["words"]);
    });
  });

  it("a failing service: REGISTER still succeeds (text search works), semantic answers 503 until it recovers", async () => {
    const fail = { now: true };
    const ai = fakeAi(fail);
    await withIndex(createWorkersAiEmbedder(ai), async (idx) => {
      await registerAll(idx);
      const text = await idx.discover(parseDiscoverRequest(enc.encode('{"text":"payments"}')));
      expect(text.ok && text.agents.map(nameOf)).toEqual(["pay"]);
      expect(idx.counts()).toEqual({ agents: 3, staleVectors: 3 });
      const r = await idx.discover(parseDiscoverRequest(enc.encode('{"semantic":"query:mostly-weather"}')));
      expect(r).toEqual({ ok: false, status: 503, error: "semantic search is unavailable: Workers AI @cf/baai/bge-m3 failed: upstream 503" });
      fail.now = false;
      expect(await semanticNames(idx, "query:mostly-weather")).toEqual(["sky", "pay", "words"]);
      expect(idx.counts()).toEqual({ agents: 3, staleVectors: 0 });
      // The missing vectors were embedded in one batch.
      expect(ai.calls.at(-1)!.inputs.text).toEqual(["pay\ntopic:payments", "sky\ntopic:weather", "words\ntopic:translation"]);
    });
  });
});

describe("endpoint embedder (fake OpenAI-compatible server)", () => {
  it("POSTs {model, input, encoding_format} with the bearer key and orders data by index", async () => {
    const requests: { url: string; headers: Headers; body: { model: string; input: string[]; encoding_format: string } }[] = [];
    const fakeFetch: typeof fetch = async (input, init) => {
      const body = JSON.parse(init!.body as string) as (typeof requests)[number]["body"];
      requests.push({ url: String(input), headers: new Headers(init!.headers), body });
      const data = body.input.map((t, index) => ({ object: "embedding", index, embedding: vectorFor(t) })).reverse();
      return Response.json({ object: "list", data, model: body.model });
    };
    const embedder = createEndpointEmbedder({ url: "http://models.local:8080/v1", model: "bge-m3", apiKey: "sk-test", fetch: fakeFetch });
    expect(embedder.id).toBe("endpoint:bge-m3@models.local:8080");
    await withIndex(embedder, async (idx) => {
      await registerAll(idx);
      expect(requests[0].url).toBe("http://models.local:8080/v1/embeddings");
      expect(requests[0].headers.get("authorization")).toBe("Bearer sk-test");
      expect(requests[0].headers.get("content-type")).toBe("application/json");
      expect(requests[0].body).toEqual({ model: "bge-m3", input: ["pay\ntopic:payments"], encoding_format: "float" });
      expect(await semanticNames(idx, "query:pay-then-words")).toEqual(["pay", "words", "sky"]);
      expect(requests.at(-1)!.body.input).toEqual(["query:pay-then-words"]);
      // A batch answered out of order still lands on the right cards.
      const batch = await embedder.embed(["topic:weather", "topic:payments"]);
      expect(batch.map((v) => [...v])).toEqual([[0, 1, 0], [1, 0, 0]]);
    });
  });

  it("an HTTP error from the endpoint becomes a 503 naming the endpoint and status", async () => {
    const fakeFetch: typeof fetch = async () => new Response("model not loaded", { status: 500 });
    await withIndex(createEndpointEmbedder({ url: "http://models.local/v1/embeddings", fetch: fakeFetch }), async (idx) => {
      await registerAll(idx);
      const r = await idx.discover(parseDiscoverRequest(enc.encode('{"semantic":"x"}')));
      expect(r).toEqual({ ok: false, status: 503, error: "semantic search is unavailable: embeddings endpoint models.local answered HTTP 500: model not loaded" });
    });
  });
});

describe("switching embedders", () => {
  it("vectors record their embedder; the next semantic DISCOVER re-embeds every card with the new one", async () => {
    const name = `switch-${Date.now()}`;
    await withIndex(createBuiltinEmbedder(), async (idx) => {
      await registerAll(idx);
      expect(idx.counts()).toEqual({ agents: 3, staleVectors: 0 });
    }, name);
    const ai = fakeAi();
    await withIndex(createWorkersAiEmbedder(ai), async (idx, storage) => {
      expect(idx.counts()).toEqual({ agents: 3, staleVectors: 3 });
      expect(await semanticNames(idx, "query:mostly-weather")).toEqual(["sky", "pay", "words"]);
      expect(idx.counts()).toEqual({ agents: 3, staleVectors: 0 });
      const rows = storage.sql.exec<{ embedder: string; n: number }>("SELECT embedder, count(*) AS n FROM agent_vectors GROUP BY embedder").toArray();
      expect(rows).toEqual([{ embedder: "workers-ai:@cf/baai/bge-m3", n: 3 }]);
    }, name);
  });
});
