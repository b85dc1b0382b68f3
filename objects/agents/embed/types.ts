/**
 * The one small embedder interface behind DISCOVER `semantic` (docs/agents.md,
 * "Embedders"). Pure: no platform imports.
 */

/** Turns texts into vectors for cosine similarity. */
export interface Embedder {
  /**
   * Identifies the embedder AND its model and dimension, e.g.
   * `builtin:hashed-ngram-concepts-v1/1024` or `workers-ai:@cf/baai/bge-m3`.
   * Stored next to every vector: vectors of another id are never compared
   * with this one's (they are re-embedded first).
   */
  readonly id: string;
  /** Which implementation: "builtin" | "workers-ai" | "endpoint". */
  readonly kind: EmbedderKind;
  /**
   * Cards whose cosine similarity to the query is at or below this value
   * are not semantic matches (the built-in embedder scores 0 for "no
   * shared feature"; model embedders use -1 = rank every card).
   */
  readonly minScore: number;
  /**
   * One vector per text, in order. Any length is accepted: implementations
   * truncate long texts. Throws EmbedderError when the service fails or
   * answers in an unexpected shape.
   */
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** The three implementations. */
export type EmbedderKind = "builtin" | "workers-ai" | "endpoint";

/** A failed embedding request (service down, bad answer). */
export class EmbedderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EmbedderError";
  }
}

/** Longest text sent to an embedding model, characters (longer texts are cut). */
export const MAX_EMBED_TEXT_CHARS = 8_000;

/** Texts per request to a remote embedding model. */
export const REMOTE_BATCH = 32;

/**
 * Embeds `texts` with `request` in batches of REMOTE_BATCH texts, each cut
 * at MAX_EMBED_TEXT_CHARS; returns the vectors in order.
 */
export async function embedInBatches(texts: string[], request: (batch: string[]) => Promise<Float32Array[]>): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (let i = 0; i < texts.length; i += REMOTE_BATCH) {
    out.push(...(await request(texts.slice(i, i + REMOTE_BATCH).map((t) => t.slice(0, MAX_EMBED_TEXT_CHARS)))));
  }
  return out;
}

/**
 * Checks a model's answer: `count` finite numeric vectors of one dimension.
 * Returns them as Float32Array; throws EmbedderError naming `source`.
 */
export function toVectors(raw: unknown, count: number, source: string): Float32Array[] {
  if (!Array.isArray(raw) || raw.length !== count) {
    throw new EmbedderError(`${source} returned ${Array.isArray(raw) ? raw.length : "no"} vectors for ${count} texts`);
  }
  let dim = -1;
  return raw.map((v, i) => {
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === "number" && Number.isFinite(x))) {
      throw new EmbedderError(`${source} returned a malformed vector at index ${i}`);
    }
    if (dim >= 0 && v.length !== dim) throw new EmbedderError(`${source} returned vectors of different dimensions`);
    dim = v.length;
    return Float32Array.from(v as number[]);
  });
}
