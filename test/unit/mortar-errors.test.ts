/** The error registry (spec §3), MortarError, ERR frames, and the docs/errors.md drift check. */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  CLIENT_ACTIONS, ERROR_REGISTRY, ERROR_SEGMENTS, ErrorCode, MAX_ERR_MESSAGE, MortarError, Op,
  decodeFrameBytes, encodeFrame, errFrame, errFrameText, errorByCode, errorByName, errorSegment,
  SPEC_ERROR_COUNT, renderErrorsMarkdown, truncateUtf8,
} from "../../wire/mortar";

/** Every code the spec's op table and text name (spec §2–§3). */
const SPEC_CODES = [
  0x0004, 0x0006, 0x0007, 0x0008, 0x0010, 0x0011, 0x0012, 0x0013, 0x0020, 0x0021, 0x0022, 0x0023, 0x0024, 0x0026,
  0x2001, 0x2002, 0x2003, 0x2005, 0x2007, 0x4001, 0x4002, 0x4003, 0x4004, 0x4005, 0x600b, 0x600c,
];

describe("error registry", () => {
  // 53 = the 51 codes of spec §3 (DESIGN.md §4) + 0x4006 PARTITION_FULL, added deliberately by the
  // topic-retention extension (issue 15), + 0x002a PERMISSION_DENIED of scoped tokens (issue 31;
  // docs/protocol.md "Extensions"): contract changes, not drift.
  it("has the spec's 51 codes plus two extension codes, unique codes and names, sorted", () => {
    expect(SPEC_ERROR_COUNT).toBe(51);
    expect(ERROR_REGISTRY.length).toBe(53);
    expect(ERROR_REGISTRY.filter((e) => !e.extension).length).toBe(51);
    expect(ERROR_REGISTRY.filter((e) => e.extension).map((e) => [e.code, e.name, e.extension])).toEqual([[0x002a, "PERMISSION_DENIED", "scoped tokens"], [0x4006, "PARTITION_FULL", "topic retention"]]);
    expect(new Set(ERROR_REGISTRY.map((e) => e.code)).size).toBe(53);
    expect(new Set(ERROR_REGISTRY.map((e) => e.name)).size).toBe(53);
    const codes = ERROR_REGISTRY.map((e) => e.code);
    expect(codes).toEqual([...codes].sort((a, b) => a - b));
  });

  it("puts every code in one of the four registered segments", () => {
    expect(ERROR_SEGMENTS.map((s) => [s.first, s.last])).toEqual([
      [0x0000, 0x0fff], [0x2000, 0x2fff], [0x4000, 0x4fff], [0x6001, 0x600c],
    ]);
    for (const e of ERROR_REGISTRY) expect(errorSegment(e.code), e.name).toBeDefined();
    expect(errorSegment(0x1001)).toBeUndefined();
    expect(errorSegment(0x600d)).toBeUndefined();
  });

  it("fills the replication segment 0x6001–0x600c (12 codes)", () => {
    const repl = ERROR_REGISTRY.filter((e) => e.code >= 0x6000).map((e) => e.code);
    expect(repl).toEqual(Array.from({ length: 12 }, (_, i) => 0x6001 + i));
  });

  it("contains every code the spec names, with the spec's names where it gives them", () => {
    for (const c of SPEC_CODES) expect(errorByCode(c), c.toString(16)).toBeDefined();
    expect(errorByCode(0x2007)?.name).toBe("MUTATION_NOT_PACKABLE");
    expect(errorByCode(0x4001)?.name).toBe("BACKPRESSURE");
    expect(errorByCode(0x4002)?.name).toBe("QUOTA_EXCEEDED");
    expect(errorByCode(0x600c)?.name).toBe("ELECTION_TIMEOUT");
    expect([0x0004, 0x0006, 0x0007]).toContain(ErrorCode.AUTH_FAILED);
    expect(ErrorCode.INVALID_PRODUCER_FIELDS).toBe(0x0013);
    expect(ErrorCode.INVALID_PARTITION_SELECTOR).toBe(0x0024);
    expect(ErrorCode.UNKNOWN_TOPIC).toBe(0x0008);
  });

  it("leaves the retired draft codes 0x000a/0x000b unassigned", () => {
    expect(errorByCode(0x000a)).toBeUndefined();
    expect(errorByCode(0x000b)).toBeUndefined();
  });

  it("gives every code a meaning and a known client action; lookups agree", () => {
    for (const e of ERROR_REGISTRY) {
      expect(e.meaning.length).toBeGreaterThan(10);
      expect(Object.keys(CLIENT_ACTIONS)).toContain(e.action);
      expect(errorByName(e.name)).toBe(e);
      expect(ErrorCode[e.name]).toBe(e.code);
    }
  });
});

describe("MortarError and ERR frames", () => {
  it("carries code, registry name, action and request op", () => {
    const e = new MortarError(ErrorCode.UNKNOWN_TOPIC, "topic 9 does not exist", Op.SUB);
    expect([e.code, e.name, e.requestOp, e.action, e.closes]).toEqual([0x0008, "UNKNOWN_TOPIC", Op.SUB, "refresh-metadata", false]);
    expect(e).toBeInstanceOf(Error);
    expect(new MortarError("BACKPRESSURE").code).toBe(0x4001);
    expect(new MortarError(ErrorCode.MALFORMED_PAYLOAD).closes).toBe(true);
  });

  it("round-trips through an ERR frame", () => {
    const e = new MortarError(ErrorCode.KEY_TOO_LONG, "key is 300 bytes", Op.PUB);
    const back = decodeFrameBytes(encodeFrame(e.toFrame()));
    expect(back.op).toBe(Op.ERR);
    if (back.op !== Op.ERR) return;
    const e2 = MortarError.fromFrame(back);
    expect([e2.code, e2.name, e2.message, e2.requestOp]).toEqual([0x0011, "KEY_TOO_LONG", "key is 300 bytes", Op.PUB]);
  });

  it("keeps an unregistered code (from a newer peer) with a give-up action", () => {
    const e = MortarError.fromFrame(errFrame(0x1234, 0, "future"));
    expect([e.code, e.name, e.action, e.spec]).toEqual([0x1234, "UNREGISTERED_0x1234", "give-up", undefined]);
  });

  it("truncates messages to MAX_ERR_MESSAGE bytes on a character boundary", () => {
    const long = "é".repeat(400); // 800 bytes of UTF-8
    const f = errFrame(ErrorCode.INTERNAL_ERROR, 0, long);
    expect(f.message.length).toBe(MAX_ERR_MESSAGE);
    expect(errFrameText(f)).toBe("é".repeat(256));
    const odd = truncateUtf8("a" + "€".repeat(200), MAX_ERR_MESSAGE); // 1 + 3k bytes: cut at 511
    expect(odd.length).toBe(511);
    expect(new MortarError(ErrorCode.INTERNAL_ERROR, long).message).toBe("é".repeat(256));
  });
});

describe("docs/errors.md", () => {
  it("is exactly what the registry renders (run `npm run docs:errors` after changing errors.ts)", () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const onDisk = readFileSync(resolve(here, "../../docs/errors.md"), "utf8");
    expect(onDisk).toBe(renderErrorsMarkdown());
    for (const e of ERROR_REGISTRY) expect(onDisk).toContain(`\`${e.name}\``);
  });
});
