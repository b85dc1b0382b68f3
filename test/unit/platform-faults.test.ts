/**
 * Platform faults (objects/shared/platform-faults.ts, objects/mq9/faults.ts,
 * objects/session/faults.ts): classification, and the answers each
 * transport gives — never with the platform's text.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { OVERLOAD_LOG_EVERY_MS, faultKind, internalErrorText, logFault, logOverload } from "../../objects/shared/platform-faults";
import { mq9Fault } from "../../objects/mq9/faults";
import { faultOf } from "../../objects/session/faults";
import { ErrorCode } from "../../wire/mortar";

/** The message workerd gives a SQL call when SQLite's process-wide heap limit is reached (#14 item 3). */
const NOMEM = () => new Error("out of memory: SQLITE_NOMEM");
const flagged = (flag: "overloaded" | "retryable") => Object.assign(new Error(`Durable Object ${flag} detail: queue 7 at 0x1f`), { [flag]: true });
const LEAK = /SQLITE|queue 7|0x1f|no such table/;

afterEach(() => vi.restoreAllMocks());

describe("faultKind", () => {
  it("classifies overloaded, out of memory, retryable and everything else", () => {
    expect(faultKind(flagged("overloaded"))).toBe("overloaded");
    expect(faultKind(NOMEM())).toBe("out_of_memory");
    expect(faultKind(new Error("Durable Object exceeded its memory limit and was reset"))).toBe("out_of_memory");
    expect(faultKind(flagged("retryable"))).toBe("unavailable");
    expect(faultKind(new Error("no such table: log: SQLITE_ERROR"))).toBe("internal");
    expect(faultKind("a string")).toBe("internal");
    expect(faultKind(null)).toBe("internal");
  });
});

describe("logging", () => {
  it("logFault logs the message with a fresh reference and returns it", () => {
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    const a = logFault("Partition", new Error("no such table: log: SQLITE_ERROR"));
    const b = logFault("Partition", new Error("x"));
    expect(a).toMatch(/^[0-9a-f]{8}$/);
    expect(b).not.toBe(a);
    expect(err.mock.calls[0]![0]).toMatch(new RegExp(`^Partition: internal error \\(ref ${a}\\): Error: no such table: log: SQLITE_ERROR`));
    expect(internalErrorText(a)).toBe(`internal error (ref ${a}); the broker logged the details`);
  });

  it("logOverload writes at most one line per interval, counting the rest", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const t0 = 10 ** 15; // far from any real clock reading of other tests
    logOverload("Mailbox", NOMEM(), t0);
    logOverload("Mailbox", NOMEM(), t0 + 1);
    logOverload("Mailbox", NOMEM(), t0 + OVERLOAD_LOG_EVERY_MS - 1);
    logOverload("Mailbox", NOMEM(), t0 + OVERLOAD_LOG_EVERY_MS);
    expect(warn.mock.calls.map((c) => c[0])).toEqual([
      "Mailbox: out_of_memory: out of memory: SQLITE_NOMEM",
      "Mailbox: out_of_memory (+2 more since the last report): out of memory: SQLITE_NOMEM",
    ]);
  });
});

describe("answers", () => {
  it("mq9: overloads are 429/503 with Retry-After, internal errors 500 with a reference; no platform text", () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(mq9Fault(flagged("overloaded"), "t")).toEqual({ code: "too_many_requests", error: "broker overloaded, retry later", retryAfterS: 1 });
    expect(mq9Fault(NOMEM(), "t")).toEqual({ code: "unavailable", error: "broker out of memory, retry later", retryAfterS: 5 });
    expect(mq9Fault(flagged("retryable"), "t")).toEqual({ code: "unavailable", error: "mailbox temporarily unavailable, retry", retryAfterS: 1 });
    const internal = mq9Fault(new Error("no such table: messages: SQLITE_ERROR"), "t");
    expect(internal.code).toBe("internal");
    expect(internal.retryAfterS).toBeUndefined();
    expect(internal.error).toMatch(/^internal error \(ref [0-9a-f]{8}\); the broker logged the details$/);
    for (const f of [flagged("overloaded"), NOMEM(), flagged("retryable"), new Error("no such table")]) expect(mq9Fault(f, "t").error).not.toMatch(LEAK);
  });

  it("MortarMQ: out of memory is BACKPRESSURE like overloaded; no platform text in any ERR message", () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(faultOf(flagged("overloaded"))).toEqual({ code: ErrorCode.BACKPRESSURE, message: "object overloaded; retry later" });
    expect(faultOf(NOMEM())).toEqual({ code: ErrorCode.BACKPRESSURE, message: "broker out of memory; retry later" });
    expect(faultOf(flagged("retryable")).code).toBe(ErrorCode.LEADER_CHANGED);
    expect(faultOf(new Error("no such table")).code).toBe(ErrorCode.INTERNAL_ERROR);
    for (const f of [flagged("overloaded"), NOMEM(), flagged("retryable"), new Error("no such table")]) expect(faultOf(f).message).not.toMatch(LEAK);
  });
});
