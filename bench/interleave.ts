/**
 * Ratios of interleaved before/after benchmark rounds (bench/runner.ts
 * `--interleave N`). Pure: rows in, ratios out.
 */
import { median } from "./stats";

/** One round's table rows from the baseline broker and from this checkout (same suite, same row order). */
export interface RoundPair {
  base: Record<string, string | number>[];
  current: Record<string, string | number>[];
}

/**
 * Per row index, for every column that is a finite non-zero number in the
 * baseline row and a number in this checkout's row, the median over rounds
 * of current ÷ base (rounded to 0.001); non-numeric columns are copied from
 * the last round's current row so the table stays readable. Rows missing
 * in a round are skipped for that round.
 */
export function medianRatios(pairs: readonly RoundPair[]): Record<string, string | number>[] {
  const rowCount = Math.max(0, ...pairs.map((p) => Math.min(p.base.length, p.current.length)));
  const out: Record<string, string | number>[] = [];
  for (let i = 0; i < rowCount; i++) {
    const label: Record<string, string | number> = {};
    const ratios = new Map<string, number[]>();
    for (const p of pairs) {
      const b = p.base[i];
      const c = p.current[i];
      if (!b || !c) continue;
      for (const [k, v] of Object.entries(c)) {
        const bv = b[k];
        if (typeof v === "number" && typeof bv === "number" && Number.isFinite(bv) && bv !== 0 && Number.isFinite(v)) {
          const list = ratios.get(k) ?? [];
          list.push(v / bv);
          ratios.set(k, list);
        } else if (typeof v === "string") {
          label[k] = v;
        }
      }
    }
    const row: Record<string, string | number> = { ...label };
    for (const [k, list] of ratios) row[k] = Math.round(median(list) * 1000) / 1000;
    out.push(row);
  }
  return out;
}
