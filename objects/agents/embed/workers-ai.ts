/**
 * Embedder on a Workers AI binding (`[ai] binding = "AI"`), default model
 * `@cf/baai/bge-m3` (multilingual, 1024 dimensions). Sends
 * `ai.run(model, { text: [...], truncate_inputs: true })` and reads
 * `data` (or `response`) as the vectors. See docs/agents.md.
 */
import { EmbedderError, embedInBatches, toVectors, type Embedder } from "./types";

/** The part of the Workers AI binding this embedder uses (so fakes are easy to write). */
export interface AiBinding {
  run(model: string, inputs: Record<string, unknown>): Promise<unknown>;
}

/** Default Workers AI embedding model. */
export const DEFAULT_WORKERS_AI_MODEL = "@cf/baai/bge-m3";

/** Creates the Workers AI embedder for `model`. */
export function createWorkersAiEmbedder(ai: AiBinding, model = DEFAULT_WORKERS_AI_MODEL): Embedder {
  return {
    id: `workers-ai:${model}`,
    kind: "workers-ai",
    minScore: -1,
    embed: (texts) =>
      embedInBatches(texts, async (batch) => {
        let answer: unknown;
        try {
          answer = await ai.run(model, { text: batch, truncate_inputs: true });
        } catch (e) {
          throw new EmbedderError(`Workers AI ${model} failed: ${(e as Error)?.message ?? String(e)}`);
        }
        const a = answer as { data?: unknown; response?: unknown } | null;
        return toVectors(a?.data ?? a?.response, batch.length, `Workers AI ${model}`);
      }),
  };
}
