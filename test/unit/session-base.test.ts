import { describe, expect, it } from "vitest";
import { ATTACH_GRANULARITY_MS, Deadlines } from "../../objects/session-base/deadlines";
import { echoCloseCode } from "../../objects/session-base/close";

describe("Deadlines (the session timers' one scheme)", () => {
  it("durable and resident deadlines: the earliest of each mode, expired ones earliest first", () => {
    const d = new Deadlines();
    d.set("keepalive", 45_000);
    d.set("tenant-recheck", 30_000);
    d.set("partial", 10_000, "resident");
    expect(d.next("durable")).toBe(30_000);
    expect(d.next("resident")).toBe(10_000);
    expect(d.expired(9_999)).toEqual([]);
    expect(d.expired(40_000)).toEqual(["partial", "tenant-recheck"]);
    d.clear("partial");
    expect(d.next("resident")).toBe(Infinity);
    expect(d.has("partial")).toBe(false);
    expect(d.get("keepalive")).toBe(45_000);
  });

  it("the attachment copy is refreshed when a deadline is set, cleared or moved earlier, or moved later by at least 1 s — not for every frame", () => {
    const d = new Deadlines();
    d.set("keepalive", 100_000);
    expect(d.dirty).toBe(true);
    expect(d.snapshot()).toEqual({ durable: { keepalive: 100_000 }, resident: [] });
    expect(d.dirty).toBe(false);
    d.set("keepalive", 100_000 + ATTACH_GRANULARITY_MS - 1); // frames keep moving the keepalive later
    expect(d.dirty).toBe(false);
    d.set("keepalive", 100_000 + ATTACH_GRANULARITY_MS);
    expect(d.dirty).toBe(true);
    d.snapshot();
    d.set("keepalive", 100_500); // earlier than stored
    expect(d.dirty).toBe(true);
    d.snapshot();
    d.set("partial", 5_000, "resident");
    expect(d.snapshot()).toEqual({ durable: { keepalive: 100_500 }, resident: ["partial"] });
    d.set("partial", 9_000, "resident"); // a resident deadline's time is not kept: no refresh
    expect(d.dirty).toBe(false);
    d.clear("partial");
    expect(d.dirty).toBe(true);
  });

  it("restore: durable deadlines come back with 1 s of slack (never early); pending resident ones are reported lost", () => {
    const before = new Deadlines();
    before.set("keepalive", 50_000);
    before.set("partial", 20_000, "resident");
    const saved = before.snapshot();
    const after = new Deadlines();
    expect(after.restore(saved)).toEqual(["partial"]);
    expect(after.get("keepalive")).toBe(50_000 + ATTACH_GRANULARITY_MS);
    expect(after.has("partial")).toBe(false);
    expect(after.dirty).toBe(true); // the lost one leaves the copy
    expect(after.snapshot()).toEqual({ durable: { keepalive: 50_000 + ATTACH_GRANULARITY_MS }, resident: [] });
    expect(new Deadlines().restore(undefined)).toEqual([]);
  });

  it("restore: `exact` kinds come back at their stored time (one alarm per re-check after hibernation, not two)", () => {
    const before = new Deadlines();
    before.set("keepalive", 70_000);
    before.set("tenant-recheck", 60_000);
    const after = new Deadlines();
    after.restore(before.snapshot(), ["tenant-recheck"]);
    expect(after.get("tenant-recheck")).toBe(60_000);
    expect(after.get("keepalive")).toBe(70_000 + ATTACH_GRANULARITY_MS);
    expect(after.expired(60_000)).toEqual(["tenant-recheck"]);
  });

  it("clearAll empties every mode", () => {
    const d = new Deadlines();
    d.set("a", 1);
    d.set("b", 2, "resident");
    d.snapshot();
    d.clearAll();
    expect([d.next("durable"), d.next("resident"), d.dirty]).toEqual([Infinity, Infinity, true]);
  });
});

describe("echoCloseCode", () => {
  it("echoes the peer's code, 1000 for a close without one, nothing when no peer is left", () => {
    expect([1000, 1001, 1008, 4000, 1005, 1006, 1015].map(echoCloseCode)).toEqual([1000, 1001, 1008, 4000, 1000, null, null]);
  });
});
