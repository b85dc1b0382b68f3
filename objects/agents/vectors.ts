/**
 * Vector helpers for semantic DISCOVER: storage encoding, normalization,
 * similarity and paging of a ranked list. Pure.
 */

/** Scales `v` to unit length in place (a zero vector stays zero) and returns it. */
export function normalize(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i] * v[i];
  if (n > 0) {
    const inv = 1 / Math.sqrt(n);
    for (let i = 0; i < v.length; i++) v[i] *= inv;
  }
  return v;
}

/** Dot product (= cosine similarity of unit vectors). Vectors of different lengths score -Infinity. */
export function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return -Infinity;
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** The SQLite BLOB form of a vector: float32, platform (little-endian) byte order. */
export function encodeVector(v: Float32Array): ArrayBuffer {
  return v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength) as ArrayBuffer;
}

/** Reads a BLOB written by encodeVector. */
export function decodeVector(blob: ArrayBuffer | Uint8Array): Float32Array {
  const bytes = blob instanceof Uint8Array ? blob : new Uint8Array(blob);
  const copy = new Uint8Array(bytes.byteLength - (bytes.byteLength % 4));
  copy.set(bytes.subarray(0, copy.byteLength));
  return new Float32Array(copy.buffer);
}

/** One scored candidate. */
export interface Scored {
  id: number;
  score: number;
}

/**
 * Keeps the best `page * limit` candidates while scores stream in, then
 * returns page `page` (1-based) ordered by score descending, ties by id
 * ascending (so paging is stable). Memory is O(page * limit).
 */
export class TopK {
  private readonly items: Scored[] = [];
  private readonly k: number;

  constructor(
    private readonly page: number,
    private readonly limit: number,
  ) {
    this.k = page * limit;
  }

  /** Offers one candidate. */
  push(id: number, score: number): void {
    const items = this.items;
    if (items.length === this.k && !better({ id, score }, items[items.length - 1])) return;
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (better(items[mid], { id, score })) lo = mid + 1;
      else hi = mid;
    }
    items.splice(lo, 0, { id, score });
    if (items.length > this.k) items.pop();
  }

  /** The requested page. */
  result(): Scored[] {
    return this.items.slice((this.page - 1) * this.limit, this.page * this.limit);
  }
}

function better(a: Scored, b: Scored): boolean {
  return a.score > b.score || (a.score === b.score && a.id < b.id);
}
