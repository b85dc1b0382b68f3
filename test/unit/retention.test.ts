/**
 * Topic retention, the pure parts (docs/protocol.md "Topic retention"):
 * which segments go (objects/partition/retention.ts), the room of a
 * discard-new log, the append plan refusing what does not fit
 * (objects/partition/plan.ts), a group ledger below the log start
 * (objects/partition/ledger.ts), and the settings' defaults and layering
 * (objects/shared/retention-config.ts).
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_RETENTION_BYTES, DEFAULT_RETENTION_MS, Discard, RetentionFields } from "../../wire/mortar";
import { appendRoom, countStart, planDeletion, takeRoom, type LogLevel, type SegmentInfo } from "../../objects/partition/retention";
import { planAppend } from "../../objects/partition/plan";
import { DeliveryState, GroupLedger } from "../../objects/partition/ledger";
import {
  NO_OVERRIDES, applyPatch, patchFromWire, resolveRetention, retentionDefaults, type Retention,
} from "../../objects/shared/retention-config";

const OVERHEAD = 33;
/** `n` segments of `per` records of 100 B keys + values each, appended at ts 1000, 2000, … */
function segments(n: number, per = 10): SegmentInfo[] {
  return Array.from({ length: n }, (_, i) => ({
    firstSeq: i * per + 1, lastSeq: (i + 1) * per, count: per, bytes: per * (100 + OVERHEAD), ts: (i + 1) * 1000,
  }));
}
const levelOf = (segs: SegmentInfo[]): LogLevel => ({
  records: segs.reduce((a, s) => a + s.count, 0), bytes: segs.reduce((a, s) => a + s.bytes - s.count * OVERHEAD, 0),
});
const limits = (r: Partial<Retention>): Retention => ({ ms: 0, bytes: 0, messages: 0, discard: "old", ...r });

describe("planDeletion", () => {
  const log = segments(5); // 50 records (seq 1..50), 5000 B, ts 1000..5000
  const all = { start: 1, last: 50 };

  it("deletes nothing without limits, or while the log is within them", () => {
    expect(planDeletion(log, levelOf(log), all, limits({}), 1e12, OVERHEAD)).toMatchObject({ segments: 0, logStart: 1 });
    expect(planDeletion(log, levelOf(log), all, limits({ bytes: 5000, messages: 50, ms: 10_000 }), 6000, OVERHEAD)).toMatchObject({ segments: 0, logStart: 1 });
  });

  it("by age: every segment appended retention_ms or more ago, the newest too; the log start moves past them", () => {
    const d = planDeletion(log, levelOf(log), all, limits({ ms: 3000 }), 6000, OVERHEAD);
    expect(d).toEqual({ segments: 3, lastFirstSeq: 21, nextSeq: 31, records: 30, encodedBytes: 30 * 133, bytes: 3000, logStart: 31 });
    expect(planDeletion(log, levelOf(log), all, limits({ ms: 1 }), 1e6, OVERHEAD)).toMatchObject({ segments: 5, logStart: 51 });
  });

  it("by count: the log start moves to high watermark − N + 1 (exactly N visible); only segments wholly below it go", () => {
    // 21 → start 30: segments 1..10 and 11..20 go, 21..30 stays with 21..29 hidden
    expect(planDeletion(log, levelOf(log), all, limits({ messages: 21 }), 0, OVERHEAD))
      .toMatchObject({ segments: 2, lastFirstSeq: 11, nextSeq: 21, records: 20, logStart: 30 });
    expect(planDeletion(log, levelOf(log), all, limits({ messages: 1 }), 0, OVERHEAD)).toMatchObject({ segments: 4, logStart: 50 });
    expect(planDeletion(log, levelOf(log), all, limits({ messages: 10 }), 0, OVERHEAD)).toMatchObject({ segments: 4, logStart: 41 });
    // the log start never moves down; a segment wholly below it goes without any limit
    expect(countStart({ start: 45, last: 50 }, limits({ messages: 10 }))).toBe(45);
    expect(planDeletion(log, levelOf(log), { start: 25, last: 50 }, limits({}), 0, OVERHEAD)).toMatchObject({ segments: 2, logStart: 25 });
  });

  it("by bytes: the oldest segment goes only while the rest still holds the limit (never below it)", () => {
    expect(planDeletion(log, levelOf(log), all, limits({ bytes: 2500 }), 0, OVERHEAD)).toMatchObject({ segments: 2, nextSeq: 21, bytes: 2000, logStart: 21 });
    expect(planDeletion(log, levelOf(log), all, limits({ bytes: 3000 }), 0, OVERHEAD)).toMatchObject({ segments: 2, logStart: 21 }); // keeps exactly 3000
    // the newest segment always stays under a byte limit, even one larger than the limit
    expect(planDeletion(log, levelOf(log), all, limits({ bytes: 1 }), 0, OVERHEAD)).toMatchObject({ segments: 4, nextSeq: 41 });
  });

  it("applies to a discard-new log too (a lowered limit shrinks it), and decides on a page of the oldest only", () => {
    expect(planDeletion(log, levelOf(log), all, limits({ messages: 30, discard: "new" }), 0, OVERHEAD)).toMatchObject({ segments: 2, logStart: 21 });
    const page = log.slice(0, 2);
    expect(planDeletion(page, levelOf(log), all, limits({ messages: 10 }), 0, OVERHEAD)).toMatchObject({ segments: 2, logStart: 41 }); // the caller runs again
  });
});

describe("discard new: appendRoom / takeRoom / planAppend", () => {
  it("has room only under a size limit with discard new", () => {
    expect(appendRoom({ records: 5, bytes: 500 }, limits({ messages: 10 }))).toBeNull(); // discard old makes room itself
    expect(appendRoom({ records: 5, bytes: 500 }, limits({ ms: 10, discard: "new" }))).toBeNull();
    expect(appendRoom({ records: 5, bytes: 500 }, limits({ messages: 10, discard: "new" }))).toEqual({ records: 5, bytes: Infinity });
    expect(appendRoom({ records: 12, bytes: 900 }, limits({ messages: 10, bytes: 1000, discard: "new" }))).toEqual({ records: 0, bytes: 100 });
  });

  it("refuses a record that would exceed the limit, keeps taking smaller ones", () => {
    const room = { records: Infinity, bytes: 100 };
    expect([takeRoom(room, 60), takeRoom(room, 60), takeRoom(room, 40), takeRoom(room, 1)]).toEqual([true, false, true, false]);
  });

  it("planAppend refuses as 'full' without recording producer state, so a later retry of the seq is appended", () => {
    const recs = [1n, 2n, 3n].map((s) => ({ producerId: 7n, producerSeq: s }));
    let left = 2;
    const plan = planAppend(recs, 10, { state: () => undefined, stored: () => undefined }, 1024, () => left-- > 0);
    expect(plan.outcomes).toEqual([{ kind: "append", sequence: 11 }, { kind: "append", sequence: 12 }, { kind: "reject", reason: "full" }]);
    expect(plan.producerAppends.map((a) => a.producerSeq)).toEqual([1n, 2n]);
    const again = planAppend([recs[2]!], 12, { state: (pid) => plan.producers.get(pid), stored: () => undefined });
    expect(again.outcomes).toEqual([{ kind: "append", sequence: 13 }]); // a gap in the window: appended once there is room
    // duplicates are still answered as duplicates, not refused, and are not asked about
    const asked: number[] = [];
    const dup = planAppend([recs[0]!], 12, { state: (pid) => plan.producers.get(pid), stored: () => 11 }, 1024, (i) => (asked.push(i), false));
    expect(dup.outcomes).toEqual([{ kind: "duplicate", sequence: 11 }]);
    expect(asked).toEqual([]);
  });
});

describe("GroupLedger.truncate (a group below the log start)", () => {
  const owner = { sessionId: "s", subscriptionId: 1, memberId: 1 };

  it("moves a group that never reached the log start up to it and counts what it skipped", () => {
    const l = new GroupLedger(1, "g", 5);
    expect(l.truncate(31)).toEqual({ skipped: 26, inFlight: { seqs: [], deliveryIds: [] } });
    expect([l.next, l.ackFloor(), l.counters.retentionSkipped]).toEqual([31, 31, 26]);
    expect(l.truncate(31).skipped).toBe(0); // idempotent
  });

  it("drops unsettled deliveries below it (their ACK is then UNKNOWN_DELIVERY) and reports the in-flight ones", () => {
    const l = new GroupLedger(1, "g", 1);
    l.assign(1, owner);
    for (let s = 1; s <= 6; s++) l.delivered(s, 100 + s, 1e12);
    const caller = { sessionId: "s", subscriptionId: 1 };
    const lim = { ackWaitMs: 1000, maxAttempts: 5 };
    expect(l.settle(0, 2, 102, 1, caller, 0, lim)).toBe(0); // 2 acked
    expect(l.settle(2, 3, 103, 1, caller, 0, lim)).toBe(0); // 3 waits for redelivery
    l.dirty.clear();
    l.removed.clear(); // as after a flush
    const t = l.truncate(5);
    expect(t).toEqual({ skipped: 3, inFlight: { seqs: [1, 4], deliveryIds: [101, 104] } }); // 1 and 4 in flight, 3 waiting
    expect(l.retries()).toEqual([]);
    expect([...l.removed].sort()).toEqual([1, 3, 4]);
    expect([l.ackFloor(), l.next, l.count(DeliveryState.IN_FLIGHT)]).toEqual([5, 7, 2]);
    expect(l.settle(0, 4, 104, 1, caller, 0, lim)).toBe(0x0022); // UNKNOWN_DELIVERY
    expect(l.settle(0, 5, 105, 1, caller, 0, lim)).toBe(0);
  });
});

describe("retention settings", () => {
  it("defaults from vars: 7 days, 8 GiB per partition (below the object's 10 GB cap), discard old; 0 = unlimited; junk = the default", () => {
    expect(retentionDefaults({})).toEqual({ ms: DEFAULT_RETENTION_MS, bytes: DEFAULT_RETENTION_BYTES, messages: 0, discard: "old" });
    expect([DEFAULT_RETENTION_MS, DEFAULT_RETENTION_BYTES]).toEqual([604_800_000, 8 * 1024 ** 3]);
    expect(DEFAULT_RETENTION_BYTES).toBeLessThan(10e9); // a Durable Object stores at most 10 GB
    expect(retentionDefaults({ MORTAR_RETENTION_BYTES: "0" }).bytes).toBe(0); // set explicitly: no limit
    expect(retentionDefaults({ MORTAR_RETENTION_MS: "0", MORTAR_RETENTION_BYTES: "1048576", MORTAR_RETENTION_MESSAGES: " 10 ", MORTAR_RETENTION_DISCARD: "NEW" }))
      .toEqual({ ms: 0, bytes: 1_048_576, messages: 10, discard: "new" });
    expect(retentionDefaults({ MORTAR_RETENTION_MS: "7d", MORTAR_RETENTION_BYTES: "-1", MORTAR_RETENTION_DISCARD: "drop" }))
      .toEqual({ ms: DEFAULT_RETENTION_MS, bytes: DEFAULT_RETENTION_BYTES, messages: 0, discard: "old" });
  });

  it("a topic's set fields win over the defaults; a twin's unset fields follow its source", () => {
    const source = applyPatch(NO_OVERRIDES, patchFromWire({
      fields: RetentionFields.MS | RetentionFields.DISCARD, retentionMs: 60_000n, retentionBytes: 5n, retentionMessages: 5n, discard: Discard.NEW,
    }));
    expect(source).toEqual({ ms: 60_000, bytes: null, messages: null, discard: "new" });
    const twin = applyPatch(NO_OVERRIDES, { bytes: 1000 });
    const d = retentionDefaults({ MORTAR_RETENTION_MESSAGES: "99" });
    expect(resolveRetention(source, d)).toEqual({ ms: 60_000, bytes: DEFAULT_RETENTION_BYTES, messages: 99, discard: "new" });
    expect(resolveRetention(resolveRetention(twin, source), d)).toEqual({ ms: 60_000, bytes: 1000, messages: 99, discard: "new" });
  });
});
