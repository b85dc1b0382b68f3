/**
 * The AgentRegistry's settings from Worker vars and bindings (docs/agents.md
 * "Embedders"), pure: which embedder serves semantic DISCOVER and how to
 * reach it. embed/select.ts builds the embedder from them.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | AGENT_EMBEDDER | auto | `auto`, `workers-ai`, `endpoint` or `builtin` (trimmed, any case) |
 * | EMBEDDINGS_URL | unset | OpenAI-compatible embeddings URL (full `/v1/embeddings` URL or base URL) |
 * | EMBEDDINGS_MODEL | per embedder | model name of the remote embedder |
 * | EMBEDDINGS_API_KEY (secret) | unset | bearer token for the endpoint |
 */
import type { AiBinding } from "./embed/workers-ai";

/** The environment fields the embedder choice reads (a subset of Env). */
export interface EmbedderEnv {
  /** Workers AI binding (`[ai] binding = "AI"` in wrangler.toml). */
  AI?: AiBinding;
  /** "auto" (default), "workers-ai", "endpoint" or "builtin". */
  AGENT_EMBEDDER?: string;
  /** OpenAI-compatible embeddings URL (full `/v1/embeddings` URL or base URL). */
  EMBEDDINGS_URL?: string;
  /** Model name for the remote embedder (Workers AI or endpoint). */
  EMBEDDINGS_MODEL?: string;
  /** Bearer token for the endpoint (set with `wrangler secret put EMBEDDINGS_API_KEY`). */
  EMBEDDINGS_API_KEY?: string;
}

/** The embedder settings as read (not checked: embed/select.ts decides what an unusable one falls back to). */
export interface EmbedderSettings {
  /** AGENT_EMBEDDER, lower case; "auto" when unset or blank. */
  wanted: string;
  /** EMBEDDINGS_MODEL trimmed; undefined when unset or blank. */
  model: string | undefined;
  /** EMBEDDINGS_URL trimmed; "" when unset. */
  url: string;
  apiKey: string | undefined;
  ai: AiBinding | undefined;
}

/** The settings of `env`. */
export function embedderSettings(env: EmbedderEnv): EmbedderSettings {
  return {
    wanted: (env.AGENT_EMBEDDER ?? "").trim().toLowerCase() || "auto",
    model: env.EMBEDDINGS_MODEL?.trim() || undefined,
    url: env.EMBEDDINGS_URL?.trim() ?? "",
    apiKey: env.EMBEDDINGS_API_KEY,
    ai: env.AI,
  };
}
