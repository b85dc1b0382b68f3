/**
 * Cursors over MortarMQ v0 bytes for the generated codec (codec.gen.ts):
 * a Writer that range-checks every value it writes (with the u8…u64
 * checks, which the fixed-offset OK result code uses directly), and a
 * Reader that fails with MALFORMED_PAYLOAD on any overrun. Integers are big-endian
 * (spec §1); byte fields are read as zero-copy views.
 */
import { MAX_U64, OP_NAMES } from "./constants";
import { ErrorCode, MortarError } from "./errors";

/** `x` when it is a u8. @throws RangeError otherwise (naming `field`) */
export function u8(x: number, field: string): number {
  if ((x & 0xff) !== x) badField(field, x, "u8");
  return x;
}
/** `x` when it is a u16. @throws RangeError otherwise */
export function u16(x: number, field: string): number {
  if ((x & 0xffff) !== x) badField(field, x, "u16");
  return x;
}
/** `x` when it is a u32. @throws RangeError otherwise */
export function u32(x: number, field: string): number {
  if (x >>> 0 !== x) badField(field, x, "u32");
  return x;
}
/** `x` when it is a u64 bigint. @throws RangeError otherwise */
export function u64(x: bigint, field: string): bigint {
  if (typeof x !== "bigint" || x < 0n || x > MAX_U64) badField(field, x, "u64");
  return x;
}

function badField(field: string, x: unknown, width: string): never {
  throw new RangeError(`${field} = ${String(x)} does not fit ${width}`);
}

/** Cursor over an output buffer; every write range-checks its value (RangeError: a programming error, not a protocol error). */
export class Writer {
  constructor(readonly v: DataView, readonly b: Uint8Array, public p: number) {}
  // The checks are written out here rather than calling u8()…u64(): one call level less keeps
  // writePayload's calls inside TurboFan's inlining budget (the PUB hot path).
  u8(x: number, field: string): void {
    if ((x & 0xff) !== x) badField(field, x, "u8");
    this.v.setUint8(this.p, x);
    this.p += 1;
  }
  u16(x: number, field: string): void {
    if ((x & 0xffff) !== x) badField(field, x, "u16");
    this.v.setUint16(this.p, x);
    this.p += 2;
  }
  u32(x: number, field: string): void {
    if (x >>> 0 !== x) badField(field, x, "u32");
    this.v.setUint32(this.p, x);
    this.p += 4;
  }
  u64(x: bigint, field: string): void {
    if (typeof x !== "bigint" || x < 0n || x > MAX_U64) badField(field, x, "u64");
    this.v.setBigUint64(this.p, x);
    this.p += 8;
  }
  /** u16 length prefix + bytes. */
  bytes16(x: Uint8Array, field: string): void {
    this.u16(x.length, `${field} length`);
    this.b.set(x, this.p);
    this.p += x.length;
  }
  /** u32 length prefix + bytes. */
  bytes32(x: Uint8Array, field: string): void {
    this.u32(x.length, `${field} length`);
    this.b.set(x, this.p);
    this.p += x.length;
  }
  /** u16 count + that many u64. */
  u64s16(x: readonly bigint[], field: string): void {
    this.u16(x.length, `${field}_len`);
    for (const e of x) this.u64(e, `${field}[]`);
  }
}

/** Cursor over one payload (or OK result) of op `op`; every read fails with MALFORMED_PAYLOAD on overrun. */
export class Reader {
  readonly v: DataView;
  p = 0;
  constructor(readonly b: Uint8Array, readonly op: number) {
    this.v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
  need(n: number, field: string): void {
    if (this.p + n > this.b.length) {
      throw this.fail(`${field} needs ${n} bytes at offset ${this.p}, payload has ${this.b.length}`);
    }
  }
  u8(field: string): number {
    this.need(1, field);
    return this.v.getUint8(this.p++);
  }
  u16(field: string): number {
    this.need(2, field);
    const x = this.v.getUint16(this.p);
    this.p += 2;
    return x;
  }
  u32(field: string): number {
    this.need(4, field);
    const x = this.v.getUint32(this.p);
    this.p += 4;
    return x;
  }
  u64(field: string): bigint {
    this.need(8, field);
    const x = this.v.getBigUint64(this.p);
    this.p += 8;
    return x;
  }
  bytes(n: number, field: string): Uint8Array {
    this.need(n, field);
    const x = this.b.subarray(this.p, this.p + n);
    this.p += n;
    return x;
  }
  bytes16(field: string): Uint8Array {
    return this.bytes(this.u16(`${field}_len`), field);
  }
  bytes32(field: string): Uint8Array {
    return this.bytes(this.u32(`${field}_len`), field);
  }
  /** u16 count + that many u64 (the whole array is bounds-checked before it is allocated). */
  u64s16(field: string): bigint[] {
    const n = this.u16(`${field}_len`);
    this.need(8 * n, field);
    const xs = new Array<bigint>(n);
    for (let i = 0; i < n; i++) xs[i] = this.u64(`${field}[]`);
    return xs;
  }
  /** Fails when bytes remain: v0 frames carry no undeclared trailer. */
  done<F>(f: F): F {
    if (this.p !== this.b.length) throw this.fail(`${this.b.length - this.p} trailing bytes after the last field`);
    return f;
  }
  /** The MALFORMED_PAYLOAD error for this payload. */
  fail(detail: string): MortarError {
    return new MortarError(ErrorCode.MALFORMED_PAYLOAD, `${OP_NAMES[this.op] ?? this.op} payload: ${detail}`, this.op);
  }
}
