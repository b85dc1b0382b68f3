/**
 * Chooses the embedder from the environment (docs/agents.md, "Embedders"):
 *
 * | AGENT_EMBEDDER          | embedder                                              |
 * |-------------------------|-------------------------------------------------------|
 * | "" / unset / "auto"     | Workers AI if the `AI` binding exists, else the       |
 * |                         | endpoint if EMBEDDINGS_URL is set, else built-in      |
 * | "workers-ai"            | Workers AI (`AI` binding required)                    |
 * | "endpoint"              | OpenAI-compatible endpoint (EMBEDDINGS_URL required)  |
 * | "builtin"               | built-in offline embedder                             |
 *
 * The vars are read in ../config.ts. A configuration that cannot be honoured (unknown value, missing binding
 * or URL, invalid URL) falls back to the built-in embedder and says why in
 * `warning`, instead of failing every agent request.
 */
import { createBuiltinEmbedder } from "./builtin";
import { createEndpointEmbedder } from "./endpoint";
import type { Embedder, EmbedderKind } from "./types";
import { createWorkersAiEmbedder, DEFAULT_WORKERS_AI_MODEL } from "./workers-ai";
import { embedderSettings, type EmbedderEnv } from "../config";

export type { EmbedderEnv };


/** The chosen embedder and, when the configuration could not be honoured, why. */
export interface EmbedderChoice {
  embedder: Embedder;
  warning: string | null;
}

/** Picks the embedder for `env` (see the table above). Never throws. */
export function selectEmbedder(env: EmbedderEnv, fetchImpl?: typeof fetch): EmbedderChoice {
  const { wanted, model, url, apiKey, ai } = embedderSettings(env);
  const fallback = (warning: string): EmbedderChoice => ({ embedder: createBuiltinEmbedder(), warning });
  const endpoint = (): EmbedderChoice => {
    try {
      return { embedder: createEndpointEmbedder({ url, model, apiKey, fetch: fetchImpl }), warning: null };
    } catch (e) {
      return fallback(`${(e as Error).message}; using the built-in embedder`);
    }
  };
  switch (wanted) {
    case "auto":
      if (ai) return { embedder: createWorkersAiEmbedder(ai, model ?? DEFAULT_WORKERS_AI_MODEL), warning: null };
      if (url) return endpoint();
      return { embedder: createBuiltinEmbedder(), warning: null };
    case "workers-ai":
      return ai
        ? { embedder: createWorkersAiEmbedder(ai, model ?? DEFAULT_WORKERS_AI_MODEL), warning: null }
        : fallback('AGENT_EMBEDDER is "workers-ai" but no AI binding is configured; using the built-in embedder');
    case "endpoint":
      return url ? endpoint() : fallback('AGENT_EMBEDDER is "endpoint" but EMBEDDINGS_URL is not set; using the built-in embedder');
    case "builtin":
      return { embedder: createBuiltinEmbedder(), warning: null };
    default:
      return fallback(`AGENT_EMBEDDER "${wanted}" is not one of auto, workers-ai, endpoint, builtin; using the built-in embedder`);
  }
}

/** What `/stats` and operators are told about the agent registry's search. */
export interface AgentRegistryInfo {
  /** Which embedder serves `semantic` DISCOVER. */
  embedder: { kind: EmbedderKind; id: string; warning: string | null };
  /** How `text` DISCOVER is served. */
  fullText: { engine: "sqlite-fts5"; tokenizer: string; ranking: "bm25" };
}

/** Describes the agent registry's search configuration for `env` (no I/O). */
export function agentRegistryInfo(env: EmbedderEnv): AgentRegistryInfo {
  const { embedder, warning } = selectEmbedder(env);
  return {
    embedder: { kind: embedder.kind, id: embedder.id, warning },
    fullText: { engine: "sqlite-fts5", tokenizer: "porter unicode61 + CJK unigram/bigram segmentation", ranking: "bm25" },
  };
}
