/**
 * Counts per series kept by a connection or a Worker isolate between two
 * reports (pure): a map of increments, handed over and reset by drain().
 */
export class Tally {
  private counts = new Map<string, number>();

  /** Adds `n` to `series`. */
  add(series: string, n = 1): void {
    if (n !== 0) this.counts.set(series, (this.counts.get(series) ?? 0) + n);
  }

  get empty(): boolean {
    return this.counts.size === 0;
  }

  /** Hands every count to `add(series, n)` and resets. */
  drain(add: (series: string, n: number) => void): void {
    const c = this.counts;
    this.counts = new Map();
    for (const [k, n] of c) add(k, n);
  }
}
