/**
 * The counting pipeline's settings from Worker vars (docs/operations.md),
 * pure.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | TELEMETRY_FLUSH_MS | 60000 | how often every reporter flushes its counters to the aggregator (> 0) |
 *
 * One minute by default: a busy object then costs one row written a minute
 * at each end of the pipeline (issue #26 (g)); tests that need fast
 * reports set it lower.
 */
import { positiveInt } from "../shared/int-var";

/** Default flush interval of every reporter, ms (TELEMETRY_FLUSH_MS). */
export const DEFAULT_TELEMETRY_FLUSH_MS = 60_000;

/** The flush interval of this deployment, ms: `TELEMETRY_FLUSH_MS`, else 60000. */
export function telemetryFlushMs(env: { TELEMETRY_FLUSH_MS?: string }): number {
  return positiveInt(env.TELEMETRY_FLUSH_MS, DEFAULT_TELEMETRY_FLUSH_MS);
}
