/**
 * Parsing of numeric Worker vars, pure (no imports): every var is optional,
 * and an empty, non-numeric or non-positive value means the default.
 */

/** `v` as a positive integer (capped at `max`), or `dflt` when empty, non-numeric or not positive. */
export function positive(v: string | undefined, dflt: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(v);
  return v && Number.isInteger(n) && n > 0 ? Math.min(n, max) : dflt;
}
