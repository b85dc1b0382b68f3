/**
 * The counting pipeline's settings from Worker vars (docs/operations.md),
 * pure.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | TELEMETRY_FLUSH_MS | 10000 | how often every reporter flushes its counters to the aggregator (> 0) |
 */
import { positiveInt } from "../shared/int-var";

/** Default flush interval of every reporter, ms (TELEMETRY_FLUSH_MS). */
export const DEFAULT_TELEMETRY_FLUSH_MS = 10_000;

/** The flush interval of this deployment, ms: `TELEMETRY_FLUSH_MS`, else 10000. */
export function telemetryFlushMs(env: { TELEMETRY_FLUSH_MS?: string }): number {
  return positiveInt(env.TELEMETRY_FLUSH_MS, DEFAULT_TELEMETRY_FLUSH_MS);
}
