import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BUILTIN_DIM, BUILTIN_EMBEDDER_ID, builtinEmbed, stem, textFeatures } from "../../objects/agents/embed/builtin";
import { embeddingsUrl } from "../../objects/agents/embed/endpoint";
import { agentRegistryInfo, selectEmbedder } from "../../objects/agents/embed/select";
import { EmbedderError, toVectors } from "../../objects/agents/embed/types";
import { createWorkersAiEmbedder } from "../../objects/agents/embed/workers-ai";
import { decodeVector, dot, encodeVector, normalize, TopK } from "../../objects/agents/vectors";

const cos = (a: string, b: string) => dot(builtinEmbed(a), builtinEmbed(b));

describe("built-in embedder", () => {
  it("stems English lightly", () => {
    expect(["payments", "billing", "billed", "schedules", "scheduling", "invoices", "news", "companies"].map(stem)).toEqual([
      "payment", "bill", "bill", "schedul", "schedul", "invoic", "news", "company",
    ]);
  });

  it("is deterministic, unit length, BUILTIN_DIM wide; a text with no features is the zero vector", () => {
    const v = builtinEmbed("Translate documents into French");
    expect(v).toHaveLength(BUILTIN_DIM);
    expect(dot(v, v)).toBeCloseTo(1, 5);
    expect([...builtinEmbed("Translate documents into French")]).toEqual([...v]);
    expect(dot(builtinEmbed("!!! the and"), builtinEmbed("!!! the and"))).toBe(0);
    expect(BUILTIN_EMBEDDER_ID).toBe(`builtin:hashed-ngram-concepts-v1/${BUILTIN_DIM}`);
  });

  it("bridges English and Chinese through lexicon concepts", () => {
    expect([...textFeatures("collect payments and bill customers").keys()]).toEqual(
      expect.arrayContaining(["c:payment", "c:invoice", "c:customer", "w:payment"]),
    );
    expect([...textFeatures("处理付款并生成发票").keys()]).toEqual(expect.arrayContaining(["c:payment", "c:invoice", "b:付款", "u:款"]));
    const card = "处理付款、退款并生成发票";
    expect(cos("collect payments and bill customers", card)).toBeGreaterThan(cos("collect payments and bill customers", "提供城市天气预报"));
    expect(cos("weather forecast", "提供城市天气预报")).toBeGreaterThan(0.3);
  });

  it("words outside the lexicon do not cross languages (documented limitation)", () => {
    expect(cos("hedgehog", "刺猬")).toBeLessThan(0.05);
  });
});

describe("vectors", () => {
  it("encode/decode round-trips; normalize gives unit length", () => {
    const v = normalize(Float32Array.from([3, 4]));
    expect([...v]).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect([...decodeVector(encodeVector(v))]).toEqual([...v]);
    expect(dot(v, Float32Array.from([1]))).toBe(-Infinity);
  });

  it("TopK pages equal the pages of a full sort (score desc, id asc)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 }), { maxLength: 60 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 10 }), (scores, limit, page) => {
        const top = new TopK(page, limit);
        scores.forEach((s, id) => top.push(id, s));
        const sorted = scores.map((score, id) => ({ id, score })).sort((a, b) => b.score - a.score || a.id - b.id);
        expect(top.result()).toEqual(sorted.slice((page - 1) * limit, page * limit));
      }),
    );
  });
});

describe("remote embedder plumbing", () => {
  it("EMBEDDINGS_URL: full URL kept, /v1 base and bare host completed", () => {
    expect(embeddingsUrl("http://h:8080/v1/embeddings")).toBe("http://h:8080/v1/embeddings");
    expect(embeddingsUrl("http://h:11434/v1/")).toBe("http://h:11434/v1/embeddings");
    expect(embeddingsUrl("https://h")).toBe("https://h/v1/embeddings");
    expect(() => embeddingsUrl("not a url")).toThrow(EmbedderError);
  });

  it("toVectors rejects wrong counts, non-numbers and mixed dimensions", () => {
    expect(() => toVectors([[1, 2]], 2, "x")).toThrow("x returned 1 vectors for 2 texts");
    expect(() => toVectors([[1, "a"]], 1, "x")).toThrow("malformed vector at index 0");
    expect(() => toVectors([[1, 2], [1]], 2, "x")).toThrow("different dimensions");
    expect(() => toVectors(undefined, 1, "x")).toThrow("returned no vectors");
  });

  it("Workers AI: batches of 32, long texts truncated, `response` accepted as well as `data`", async () => {
    const calls: string[][] = [];
    const ai = {
      async run(_m: string, inputs: Record<string, unknown>) {
        const text = inputs.text as string[];
        calls.push(text);
        return { response: text.map(() => [1, 0]) };
      },
    };
    const out = await createWorkersAiEmbedder(ai, "@cf/custom/model").embed([...Array(40)].map((_, i) => (i === 0 ? "x".repeat(9000) : `t${i}`)));
    expect(out).toHaveLength(40);
    expect(calls.map((c) => c.length)).toEqual([32, 8]);
    expect(calls[0][0]).toHaveLength(8000);
  });
});

describe("embedder selection", () => {
  const ai = { run: async () => ({}) };
  it("auto: AI binding, else endpoint URL, else built-in", () => {
    expect(selectEmbedder({}).embedder.kind).toBe("builtin");
    expect(selectEmbedder({ EMBEDDINGS_URL: "http://m/v1" }).embedder.id).toBe("endpoint:bge-m3@m");
    expect(selectEmbedder({ AI: ai, EMBEDDINGS_URL: "http://m/v1" }).embedder.id).toBe("workers-ai:@cf/baai/bge-m3");
    expect(selectEmbedder({ AI: ai, EMBEDDINGS_MODEL: "@cf/qwen/qwen3-embedding-0.6b" }).embedder.id).toBe("workers-ai:@cf/qwen/qwen3-embedding-0.6b");
  });

  it("explicit choices, and configurations that cannot be honoured fall back to built-in with a warning", () => {
    expect(selectEmbedder({ AI: ai, AGENT_EMBEDDER: "builtin" })).toMatchObject({ embedder: { kind: "builtin" }, warning: null });
    expect(selectEmbedder({ AI: ai, EMBEDDINGS_URL: "http://m", AGENT_EMBEDDER: "endpoint" }).embedder.kind).toBe("endpoint");
    expect(selectEmbedder({ AGENT_EMBEDDER: "workers-ai" }).warning).toMatch(/no AI binding/);
    expect(selectEmbedder({ AGENT_EMBEDDER: "endpoint" }).warning).toMatch(/EMBEDDINGS_URL is not set/);
    expect(selectEmbedder({ EMBEDDINGS_URL: "::" }).warning).toMatch(/not a valid URL/);
    expect(selectEmbedder({ AGENT_EMBEDDER: "magic" }).warning).toMatch(/not one of/);
  });

  it("agentRegistryInfo says which embedder is active", () => {
    expect(agentRegistryInfo({})).toEqual({
      embedder: { kind: "builtin", id: BUILTIN_EMBEDDER_ID, warning: null },
      fullText: { engine: "sqlite-fts5", tokenizer: "porter unicode61 + CJK unigram/bigram segmentation", ranking: "bm25" },
    });
  });
});
