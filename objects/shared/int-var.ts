/**
 * Integer Worker vars, pure (no imports): the one parser every object's
 * `config.ts` uses. A var is optional; after trimming, it must be a whole
 * number (`Number()` syntax: `30000`, `1e3`) not below the minimum. An
 * unset, empty, non-numeric, fractional or too-small value means the
 * default; a value above `max` is capped at `max`.
 */

/**
 * `v` as an integer ≥ `min`, capped at `max`; `dflt` when `v` is unset,
 * blank, not a whole number, or below `min`.
 */
export function intVar(v: string | undefined, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const t = v?.trim() ?? "";
  const n = Number(t);
  return t !== "" && Number.isInteger(n) && n >= min ? Math.min(n, max) + 0 : dflt; // + 0: "-0" is 0
}

/** `v` as a whole number ≥ 0 (0 is a value, e.g. "no limit"), capped at `max`; else `dflt`. */
export function nonNegativeInt(v: string | undefined, dflt: number, max = Number.MAX_SAFE_INTEGER): number {
  return intVar(v, dflt, 0, max);
}

/** `v` as a whole number > 0, capped at `max`; else `dflt` (0 means the default). */
export function positiveInt(v: string | undefined, dflt: number, max = Number.MAX_SAFE_INTEGER): number {
  return intVar(v, dflt, 1, max);
}
