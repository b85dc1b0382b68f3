/**
 * Per-connection MortarMQ wire counters (pure): frames received and sent by
 * op, and ERR frames sent by error code (bytes both ways are counted by the
 * session base, objects/session-base/SocketSession.ts). Counting is a few
 * array increments per frame; the session turns them into metric series
 * only when it reports (docs/operations.md).
 */
import { Op } from "../../wire/mortar/constants";
import { errorByCode, formatErrorCode } from "../../wire/mortar/errors";
import { opLabel, series } from "../usage/catalog";

export class WireCounters {
  private framesIn = new Float64Array(256);
  private framesOut = new Float64Array(256);
  private errors = new Map<number, number>();

  /** A complete frame with `op` was decoded. */
  frameIn(op: number): void {
    this.framesIn[op & 0xff]++;
  }

  /**
   * `bytes` (whole frames back to back) were written to the client: counts
   * each frame by op, and ERR frames by code (u16 after the op byte).
   */
  sent(bytes: Uint8Array): void {
    for (let o = 0; o + 5 <= bytes.length; ) {
      const len = ((bytes[o]! << 24) >>> 0) + (bytes[o + 1]! << 16) + (bytes[o + 2]! << 8) + bytes[o + 3]!;
      const op = bytes[o + 4]!;
      this.framesOut[op]++;
      if (op === Op.ERR && o + 7 <= bytes.length) {
        const code = (bytes[o + 5]! << 8) | bytes[o + 6]!;
        this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
      }
      if (len === 0) break;
      o += 4 + len;
    }
  }

  /** Hands every non-zero count to `add(series, n)` and resets. */
  drain(add: (series: string, n: number) => void): void {
    for (let op = 0; op < 256; op++) {
      if (this.framesIn[op]) add(series("mortarmq_frames_received_total", { op: opLabel(op) }), this.framesIn[op]!);
      if (this.framesOut[op]) add(series("mortarmq_frames_sent_total", { op: opLabel(op) }), this.framesOut[op]!);
    }
    for (const [code, n] of this.errors) {
      add(series("mortarmq_errors_total", { code: formatErrorCode(code), name: errorByCode(code)?.name ?? "UNREGISTERED" }), n);
    }
    this.framesIn.fill(0);
    this.framesOut.fill(0);
    this.errors.clear();
  }
}
