/**
 * Embedder on an OpenAI-compatible embeddings endpoint (OpenAI, Ollama,
 * llama.cpp server, vLLM, text-embeddings-inference, LocalAI, …):
 * `POST <url>` with `{"model", "input": [...], "encoding_format": "float"}`
 * and `Authorization: Bearer <key>` when a key is configured; reads
 * `data[].embedding` ordered by `data[].index`. See docs/agents.md.
 */
import { EmbedderError, embedInBatches, toVectors, type Embedder } from "./types";

/** Model name sent when EMBEDDINGS_MODEL is not set. */
export const DEFAULT_ENDPOINT_MODEL = "bge-m3";

/** Per-request timeout, ms. */
export const ENDPOINT_TIMEOUT_MS = 15_000;

/** Configuration of the endpoint embedder. */
export interface EndpointConfig {
  /** EMBEDDINGS_URL: the full `/v1/embeddings` URL, or a base URL (see embeddingsUrl). */
  url: string;
  model?: string;
  apiKey?: string;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

/**
 * The request URL for EMBEDDINGS_URL: used as is when its path ends in
 * `/embeddings`; `…/v1` gets `/embeddings` appended; anything else gets
 * `/v1/embeddings`. Throws EmbedderError for a URL that does not parse.
 */
export function embeddingsUrl(configured: string): string {
  let u: URL;
  try {
    u = new URL(configured.trim());
  } catch {
    throw new EmbedderError(`EMBEDDINGS_URL "${configured}" is not a valid URL`);
  }
  const path = u.pathname.replace(/\/+$/, "");
  if (path.endsWith("/embeddings")) return u.toString();
  u.pathname = path.endsWith("/v1") ? `${path}/embeddings` : `${path}/v1/embeddings`;
  return u.toString();
}

/** Creates the endpoint embedder. */
export function createEndpointEmbedder(cfg: EndpointConfig): Embedder {
  const url = embeddingsUrl(cfg.url);
  const model = cfg.model?.trim() || DEFAULT_ENDPOINT_MODEL;
  const doFetch = cfg.fetch ?? ((input, init) => fetch(input, init));
  const host = new URL(url).host;
  return {
    id: `endpoint:${model}@${host}`,
    kind: "endpoint",
    minScore: -1,
    embed: (texts) => embedInBatches(texts, request),
  };

  async function request(input: string[]): Promise<Float32Array[]> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (cfg.apiKey) headers.authorization = `Bearer ${cfg.apiKey}`;
    let res: Response;
    try {
      res = await doFetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, input, encoding_format: "float" }),
        signal: AbortSignal.timeout(ENDPOINT_TIMEOUT_MS),
      });
    } catch (e) {
      throw new EmbedderError(`embeddings endpoint ${host} failed: ${(e as Error)?.message ?? String(e)}`);
    }
    if (!res.ok) {
      const detail = (await res.text().catch(() => "")).slice(0, 200);
      throw new EmbedderError(`embeddings endpoint ${host} answered HTTP ${res.status}${detail ? `: ${detail}` : ""}`);
    }
    let body: { data?: { embedding?: unknown; index?: number }[] };
    try {
      body = (await res.json()) as typeof body;
    } catch {
      throw new EmbedderError(`embeddings endpoint ${host} answered with invalid JSON`);
    }
    const data = Array.isArray(body?.data) ? [...body.data] : null;
    if (data && data.every((d) => typeof d?.index === "number")) data.sort((a, b) => a.index! - b.index!);
    return toVectors(data?.map((d) => d?.embedding), input.length, `embeddings endpoint ${host}`);
  }
}
