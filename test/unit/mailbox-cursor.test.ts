import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Lane } from "../../wire/mq9";
import { applyAck, cursorAt, decodeCursor, encodeCursor, laneFromLastBatch, openGroup, recordBatch, type GroupCursor } from "../../objects/mailbox/cursor";

type Msg = { lane: Lane; msgId: number };

/** applyAck that must be accepted; returns the new cursor. */
function acked(c: GroupCursor, lane: Lane, msgId: number): GroupCursor {
  const r = applyAck(c, lane, msgId);
  if (!r.ok) throw new Error(`ACK ${msgId} refused (highest delivered ${r.highestDelivered})`);
  return r.cursor;
}

/** The batch a FETCH would deliver from `c` over `msgs` (delivery order, at most n). */
function deliver(c: GroupCursor, msgs: Msg[], n: number): Msg[] {
  return msgs
    .filter((m) => m.msgId >= c.floors[m.lane])
    .sort((a, b) => a.lane - b.lane || a.msgId - b.msgId)
    .slice(0, n);
}

describe("group cursor and the ACK rule", () => {
  it("pages 3/3/3/0 when the last message of each batch is acked", () => {
    const msgs: Msg[] = Array.from({ length: 9 }, (_, i) => ({ lane: 2, msgId: i }));
    let c = cursorAt(0);
    const sizes: number[] = [];
    for (let page = 0; page < 4; page++) {
      const batch = deliver(c, msgs, 3);
      sizes.push(batch.length);
      c = recordBatch(c, batch);
      if (batch.length) c = acked(c, batch[batch.length - 1].lane, batch[batch.length - 1].msgId);
    }
    expect(sizes).toEqual([3, 3, 3, 0]);
  });

  it("acking the last message of a mixed batch acknowledges the whole batch", () => {
    const msgs: Msg[] = [{ lane: 2, msgId: 0 }, { lane: 1, msgId: 1 }, { lane: 0, msgId: 2 }, { lane: 2, msgId: 3 }];
    let c = cursorAt(0);
    const batch = deliver(c, msgs, 4);
    expect(batch.map((m) => m.msgId)).toEqual([2, 1, 0, 3]);
    c = recordBatch(c, batch);
    c = acked(c, 2, 3);
    expect(c.floors).toEqual([3, 2, 4]);
    expect(deliver(c, msgs, 10)).toEqual([]);
  });

  it("never skips a higher-lane message that arrived after the batch", () => {
    const msgs: Msg[] = [{ lane: 2, msgId: 0 }, { lane: 2, msgId: 1 }];
    let c = recordBatch(cursorAt(0), deliver(cursorAt(0), msgs, 10));
    msgs.push({ lane: 0, msgId: 2 }); // critical arrives before the ACK
    c = acked(c, 2, 1);
    expect(deliver(c, msgs, 10)).toEqual([{ lane: 0, msgId: 2 }]);
  });

  it("an ACK from an older batch moves only its own lane", () => {
    const msgs: Msg[] = [{ lane: 0, msgId: 5 }, { lane: 2, msgId: 0 }, { lane: 2, msgId: 1 }];
    let c = cursorAt(0);
    c = recordBatch(c, deliver(c, msgs, 3)); // [5, 0, 1]
    c = recordBatch(c, deliver(c, msgs, 1)); // re-fetch before acking: [5]
    c = acked(c, 2, 1); // normal 1 is not in the last batch
    expect(c.floors).toEqual([0, 0, 2]);
    expect(deliver(c, msgs, 10)).toEqual([{ lane: 0, msgId: 5 }]);
  });

  it("never moves a floor backwards", () => {
    let c = acked(recordBatch(cursorAt(0), Array.from({ length: 8 }, (_, i) => ({ lane: 2 as Lane, msgId: i }))), 2, 7);
    const r = applyAck(c, 2, 3);
    expect(r.ok && !r.changed && r.cursor.floors[2]).toBe(8);
    c = cursorAt(10);
    const below = applyAck(c, 0, 4);
    expect(below.ok && below.changed).toBe(false);
  });

  it("refuses an ACK above the highest msg_id delivered in its lane", () => {
    // group fetched an empty mailbox (position 0), then 5 messages were sent: nothing delivered yet
    let c = cursorAt(0);
    expect(applyAck(c, 2, 3)).toEqual({ ok: false, highestDelivered: -1 });
    c = recordBatch(c, [{ lane: 2, msgId: 0 }, { lane: 2, msgId: 1 }, { lane: 0, msgId: 4 }]);
    expect(applyAck(c, 2, 3)).toEqual({ ok: false, highestDelivered: 1 });
    expect(applyAck(c, 1, 2)).toEqual({ ok: false, highestDelivered: -1 });
    expect(acked(c, 2, 1).floors).toEqual([5, 0, 2]);
    // a group starting at from_id 3 treats everything below 3 as behind it: ACKs there are no-ops
    const r = applyAck(cursorAt(3), 2, 1);
    expect(r.ok && r.changed).toBe(false);
  });

  it("resolves the lane of a vanished message conservatively", () => {
    const c = recordBatch(cursorAt(0), [{ lane: 0, msgId: 10 }, { lane: 0, msgId: 12 }, { lane: 2, msgId: 11 }]);
    expect(laneFromLastBatch(c, 11)).toBe(0);
    expect(laneFromLastBatch(c, 13)).toBeNull();
    expect(laneFromLastBatch(cursorAt(0), 1)).toBeNull();
  });

  it("round-trips through its stored form", () => {
    const c = recordBatch(cursorAt(3), [{ lane: 1, msgId: 4 }]);
    const e = encodeCursor(c);
    expect(decodeCursor(e.floors, e.batch, e.delivered)).toEqual(c);
    expect(decodeCursor(encodeCursor(cursorAt(0)).floors, null, encodeCursor(cursorAt(0)).delivered)).toEqual(cursorAt(0));
    // rows written before `delivered` existed: below the floor, or the last batch's end
    expect(decodeCursor("[3,3,3]", JSON.stringify([null, [4, 6], null]), null).delivered).toEqual([2, 6, 2]);
  });

  it("property: floors only cover delivered messages and never decrease, whatever is acked", () => {
    const op = fc.oneof(
      fc.record({ t: fc.constant("send" as const), lane: fc.constantFrom<Lane>(0, 1, 2) }),
      fc.record({ t: fc.constant("fetch" as const), n: fc.integer({ min: 1, max: 5 }) }),
      fc.record({ t: fc.constant("ack" as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const msgs: Msg[] = [];
        const delivered = new Set<number>();
        let lastBatch: Msg[] = [];
        let c = cursorAt(0);
        for (const o of ops) {
          if (o.t === "send") msgs.push({ lane: o.lane, msgId: msgs.length });
          else if (o.t === "fetch") {
            lastBatch = deliver(c, msgs, o.n);
            lastBatch.forEach((m) => delivered.add(m.msgId));
            c = recordBatch(c, lastBatch);
          } else if (msgs.length) {
            // any sent message, delivered or not: only delivered ones (or ones behind the floor) may be accepted
            const m = msgs[o.pick % msgs.length];
            const before = [...c.floors];
            const r = applyAck(c, m.lane, m.msgId);
            const highest = Math.max(-1, ...[...delivered].filter((id) => msgs[id].lane === m.lane));
            expect(r.ok).toBe(m.msgId <= highest);
            if (r.ok) c = r.cursor;
            c.floors.forEach((f, i) => expect(f).toBeGreaterThanOrEqual(before[i]));
          }
          for (const m of msgs) if (m.msgId < c.floors[m.lane]) expect(delivered.has(m.msgId)).toBe(true);
        }
      }),
    );
  });
});

describe("opening a group at FETCH", () => {
  const never = (what: string) => () => {
    throw new Error(`${what} must not be asked`);
  };

  it("a new group starts at the FETCH's start id and must be saved", () => {
    expect(openGroup(null, false, () => 3, () => 7, 1000)).toEqual({ kind: "start", cursor: cursorAt(7) });
  });

  it("an existing group keeps its position without asking for a start or the group count", () => {
    const stored = cursorAt(2);
    expect(openGroup(stored, false, never("groupCount"), never("startId"), 1000)).toEqual({ kind: "read" });
  });

  it("force_deliver restarts an existing group even when the mailbox is at the cap", () => {
    expect(openGroup(cursorAt(2), true, never("groupCount"), () => 9, 1)).toEqual({ kind: "start", cursor: cursorAt(9) });
  });

  it("a new group at the cap is refused, with or without force_deliver, and nothing is started", () => {
    expect(openGroup(null, false, () => 1000, never("startId"), 1000)).toEqual({ kind: "full" });
    expect(openGroup(null, true, () => 1000, never("startId"), 1000)).toEqual({ kind: "full" });
    expect(openGroup(null, false, () => 999, () => 0, 1000).kind).toBe("start");
  });
});
