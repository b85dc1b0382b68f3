import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { classifyProducerSeq, inWindow, ProducerCache, type ProducerState } from "../../objects/partition/dedupe";
import { planAppend, type ProducerLookups, type StoredAppend } from "../../objects/partition/plan";

/** Committed producer state held in plain maps (what the Partition keeps in SQLite). */
class Committed implements ProducerLookups {
  states = new Map<bigint, ProducerState>();
  rows = new Map<string, StoredAppend>();
  lastSeq = 0;
  state(pid: bigint) {
    return this.states.get(pid);
  }
  stored(pid: bigint, pseq: bigint) {
    return this.rows.get(`${pid}/${pseq}`);
  }
  /** Plans and "commits" a batch; returns the outcomes. */
  run(records: [bigint, bigint][], window = 1024) {
    const plan = planAppend(records.map(([producerId, producerSeq]) => ({ producerId, producerSeq })), this.lastSeq, this, window);
    for (const a of plan.producerAppends) this.rows.set(`${a.producerId}/${a.producerSeq}`, { sequence: a.sequence, ordinal: a.ordinal });
    for (const [pid, s] of plan.producers) this.states.set(pid, s);
    this.lastSeq = plan.lastSequence;
    return plan;
  }
}

describe("classifyProducerSeq", () => {
  it("applies the producer_id = 0 rules", () => {
    expect(classifyProducerSeq(0n, 0n, undefined)).toBe("non-idempotent");
    expect(classifyProducerSeq(0n, 5n, undefined)).toBe("missing-producer-id");
  });
  it("treats the first seq and anything above the highest as new", () => {
    expect(classifyProducerSeq(9n, 0n, undefined)).toBe("new");
    expect(classifyProducerSeq(9n, 11n, 10n)).toBe("new");
    expect(classifyProducerSeq(9n, 500n, 10n)).toBe("new");
    expect(classifyProducerSeq(9n, 10n, 10n)).toBe("seen-range");
    expect(classifyProducerSeq(9n, 0n, 10n)).toBe("seen-range");
  });
  it("inWindow keeps exactly the last `window` appends", () => {
    expect(inWindow(1, 1024, 1024)).toBe(true);
    expect(inWindow(1, 1025, 1024)).toBe(false);
    expect(inWindow(2, 1025, 1024)).toBe(true);
  });
});

describe("planAppend", () => {
  it("numbers appends from the last sequence and counts non-idempotent records", () => {
    const c = new Committed();
    const p = c.run([[0n, 0n], [0n, 0n], [7n, 1n]]);
    expect(p.outcomes).toEqual([
      { kind: "append", sequence: 1 }, { kind: "append", sequence: 2 }, { kind: "append", sequence: 3 },
    ]);
    expect(p.nonIdempotent).toBe(2);
    expect(p.appended).toBe(3);
    expect(c.run([[0n, 0n]]).outcomes).toEqual([{ kind: "append", sequence: 4 }]);
  });

  it("rejects producer_id 0 with producer_seq > 0 without using a sequence", () => {
    const c = new Committed();
    const p = c.run([[0n, 3n], [0n, 0n]]);
    expect(p.outcomes).toEqual([{ kind: "reject", reason: "missing-producer-id" }, { kind: "append", sequence: 1 }]);
  });

  it("answers a retry with the ORIGINAL sequence, also inside the same batch", () => {
    const c = new Committed();
    c.run([[5n, 1n], [5n, 2n], [0n, 0n], [5n, 3n]]);
    const p = c.run([[5n, 2n], [5n, 4n], [5n, 4n], [5n, 1n]]);
    expect(p.outcomes).toEqual([
      { kind: "duplicate", sequence: 2 },
      { kind: "append", sequence: 5 },
      { kind: "duplicate", sequence: 5 },
      { kind: "duplicate", sequence: 1 },
    ]);
    expect(p.appended).toBe(1);
  });

  it("accepts gaps, but a skipped value arriving later is out of window", () => {
    const c = new Committed();
    expect(c.run([[5n, 1n], [5n, 10n]]).outcomes.map((o) => o.kind)).toEqual(["append", "append"]);
    expect(c.run([[5n, 4n]]).outcomes).toEqual([{ kind: "reject", reason: "out-of-window" }]);
  });

  it("a seq older than the last `window` appends is out of window; the boundary one is still a duplicate", () => {
    const c = new Committed();
    c.run(Array.from({ length: 10 }, (_, i) => [5n, BigInt(i + 1)] as [bigint, bigint]), 4);
    const p = c.run([[5n, 7n], [5n, 6n], [5n, 10n]], 4);
    expect(p.outcomes).toEqual([
      { kind: "duplicate", sequence: 7 },
      { kind: "reject", reason: "out-of-window" },
      { kind: "duplicate", sequence: 10 },
    ]);
  });

  it("appends earlier in the same batch push old values out of the window", () => {
    const c = new Committed();
    c.run([[5n, 1n], [5n, 2n]], 3);
    const p = c.run([[5n, 3n], [5n, 1n], [5n, 4n], [5n, 1n], [5n, 2n]], 3);
    expect(p.outcomes).toEqual([
      { kind: "append", sequence: 3 },
      { kind: "duplicate", sequence: 1 },
      { kind: "append", sequence: 4 },
      { kind: "reject", reason: "out-of-window" },
      { kind: "duplicate", sequence: 2 },
    ]);
  });

  it("keeps producers independent", () => {
    const c = new Committed();
    const p = c.run([[1n, 1n], [2n, 1n], [1n, 1n], [2n, 2n]]);
    expect(p.outcomes.map((o) => ("sequence" in o ? o.sequence : o.reason))).toEqual([1, 2, 1, 3]);
    expect(p.producers.get(1n)).toEqual({ highest: 1n, ordinal: 1 });
    expect(p.producers.get(2n)).toEqual({ highest: 2n, ordinal: 2 });
  });

  it("property: replaying any already-appended recent seq never appends and names its original sequence", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 60 }), fc.nat(), (steps, pick) => {
        const c = new Committed();
        let seq = 0n;
        const sent: [bigint, number][] = [];
        for (const s of steps) {
          seq += BigInt(s);
          const o = c.run([[42n, seq]]).outcomes[0];
          if (o.kind !== "append") return false;
          sent.push([seq, o.sequence]);
        }
        const [pseq, original] = sent[pick % sent.length];
        const before = c.lastSeq;
        const o = c.run([[42n, pseq]], 1024).outcomes[0];
        return o.kind === "duplicate" && o.sequence === original && c.lastSeq === before;
      }),
    );
  });
});

describe("ProducerCache", () => {
  it("evicts the least recently used producer beyond capacity", () => {
    const cache = new ProducerCache(2);
    cache.set(1n, { highest: 1n, ordinal: 1 });
    cache.set(2n, { highest: 2n, ordinal: 1 });
    cache.get(1n);
    cache.set(3n, { highest: 3n, ordinal: 1 });
    expect(cache.get(2n)).toBeUndefined();
    expect(cache.get(1n)?.highest).toBe(1n);
    expect(cache.size).toBe(2);
  });
});
