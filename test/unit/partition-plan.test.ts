import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { classifyProducerSeq, cloneState, ProducerCache, recordAppend, type ProducerState } from "../../objects/partition/dedupe";
import { planAppend, type ProducerLookups } from "../../objects/partition/plan";

/** Committed producer state held in plain maps (what the Partition keeps in SQLite). */
class Committed implements ProducerLookups {
  states = new Map<bigint, ProducerState>();
  rows = new Map<string, number>();
  lastSeq = 0;
  state(pid: bigint) {
    return this.states.get(pid);
  }
  stored(pid: bigint, pseq: bigint) {
    return this.rows.get(`${pid}/${pseq}`);
  }
  /** Plans and "commits" a batch; returns the plan. */
  run(records: [bigint, bigint][], window = 1024) {
    const plan = planAppend(records.map(([producerId, producerSeq]) => ({ producerId, producerSeq })), this.lastSeq, this, window);
    for (const a of plan.producerAppends) this.rows.set(`${a.producerId}/${a.producerSeq}`, a.sequence);
    for (const [pid, s] of plan.producers) this.states.set(pid, s);
    this.lastSeq = plan.lastSequence;
    return plan;
  }
}

const kinds = (p: ReturnType<Committed["run"]>) => p.outcomes.map((o) => ("sequence" in o ? `${o.kind[0]}${o.sequence}` : o.reason));

describe("classifyProducerSeq / recordAppend", () => {
  it("applies the producer_id = 0 rules", () => {
    expect(classifyProducerSeq(0n, 0n, undefined)).toBe("non-idempotent");
    expect(classifyProducerSeq(0n, 5n, undefined)).toBe("missing-producer-id");
  });
  it("classifies by value against (highest − window, highest]", () => {
    let st = recordAppend(undefined, 10n, 8); // window of values 3..10
    st = recordAppend(st, 12n, 8); // window 5..12; 11 skipped
    expect(classifyProducerSeq(9n, 13n, st, 8)).toBe("new");
    expect(classifyProducerSeq(9n, 12n, st, 8)).toBe("duplicate");
    expect(classifyProducerSeq(9n, 10n, st, 8)).toBe("duplicate");
    expect(classifyProducerSeq(9n, 11n, st, 8)).toBe("gap");
    expect(classifyProducerSeq(9n, 5n, st, 8)).toBe("gap");
    expect(classifyProducerSeq(9n, 4n, st, 8)).toBe("out-of-window");
    expect(classifyProducerSeq(9n, 0n, st, 8)).toBe("out-of-window");
  });
  it("a jump of a whole window or more forgets every earlier value", () => {
    const st = recordAppend(recordAppend(undefined, 1n, 8), 2n, 8);
    const jumped = recordAppend(cloneState(st), 10n, 8); // window 3..10
    expect(classifyProducerSeq(9n, 3n, jumped, 8)).toBe("gap");
    expect(classifyProducerSeq(9n, 2n, jumped, 8)).toBe("out-of-window");
    expect(classifyProducerSeq(9n, 2n, st, 8)).toBe("duplicate"); // the clone left the original alone
  });
});

describe("planAppend", () => {
  it("numbers appends from the last sequence and counts non-idempotent records", () => {
    const c = new Committed();
    const p = c.run([[0n, 0n], [0n, 0n], [7n, 1n]]);
    expect(kinds(p)).toEqual(["a1", "a2", "a3"]);
    expect(p.nonIdempotent).toBe(2);
    expect(p.appended).toBe(3);
    expect(kinds(c.run([[0n, 0n]]))).toEqual(["a4"]);
  });

  it("rejects producer_id 0 with producer_seq > 0 without using a sequence", () => {
    const c = new Committed();
    expect(kinds(c.run([[0n, 3n], [0n, 0n]]))).toEqual(["missing-producer-id", "a1"]);
  });

  it("answers a retry with the ORIGINAL sequence, also inside the same batch", () => {
    const c = new Committed();
    c.run([[5n, 1n], [5n, 2n], [0n, 0n], [5n, 3n]]);
    const p = c.run([[5n, 2n], [5n, 4n], [5n, 4n], [5n, 1n]]);
    expect(kinds(p)).toEqual(["d2", "a5", "d5", "d1"]);
    expect(p.appended).toBe(1);
  });

  it("fills a gap inside the window (a PUB refused with BACKPRESSURE, resent after later ones) exactly once", () => {
    const c = new Committed();
    expect(kinds(c.run([[5n, 1n], [5n, 2n], [5n, 4n], [5n, 10n]]))).toEqual(["a1", "a2", "a3", "a4"]);
    expect(kinds(c.run([[5n, 3n], [5n, 4n], [5n, 3n]]))).toEqual(["a5", "d3", "d5"]);
    expect(kinds(c.run([[5n, 3n], [5n, 11n]]))).toEqual(["d5", "a6"]);
    expect(c.states.get(5n)?.highest).toBe(11n);
  });

  it("only a seq at or below highest − window is out of window; the oldest value in it still counts", () => {
    const c = new Committed();
    c.run(Array.from({ length: 10 }, (_, i) => [5n, BigInt(i + 1)] as [bigint, bigint]), 4); // window 7..10
    expect(kinds(c.run([[5n, 7n], [5n, 6n], [5n, 10n]], 4))).toEqual(["d7", "out-of-window", "d10"]);
  });

  it("appends earlier in the same batch slide the window", () => {
    const c = new Committed();
    c.run([[5n, 1n], [5n, 2n]], 3);
    const p = c.run([[5n, 3n], [5n, 1n], [5n, 4n], [5n, 1n], [5n, 2n]], 3);
    expect(kinds(p)).toEqual(["a3", "d1", "a4", "out-of-window", "d2"]);
  });

  it("keeps producers independent and never mutates committed state before the commit", () => {
    const c = new Committed();
    c.run([[1n, 1n]]);
    const before = c.states.get(1n)!;
    const snapshot = before.seen.slice();
    const p = planAppend([{ producerId: 1n, producerSeq: 2n }, { producerId: 2n, producerSeq: 1n }, { producerId: 1n, producerSeq: 1n }], c.lastSeq, c);
    expect(p.outcomes.map((o) => ("sequence" in o ? o.sequence : o.reason))).toEqual([2, 3, 1]);
    expect(before.highest).toBe(1n);
    expect(before.seen).toEqual(snapshot);
    expect(p.producers.get(1n)?.highest).toBe(2n);
    expect(p.producers.get(2n)?.highest).toBe(1n);
  });

  /** The rule of docs/protocol.md as a plain model: appended seqs with their sequence, and the highest. */
  function model(window: number) {
    const appended = new Map<bigint, number>();
    let highest: bigint | undefined;
    let last = 0;
    return {
      appended,
      expect(pseq: bigint): string {
        const inRange = highest === undefined || pseq > highest - BigInt(window);
        const had = appended.get(pseq);
        if (!inRange) return "out-of-window";
        if (had !== undefined) return `d${had}`;
        appended.set(pseq, ++last);
        if (highest === undefined || pseq > highest) highest = pseq;
        return `a${last}`;
      },
    };
  }

  it("property: any interleaving of new seqs, gaps and retries follows the rule (never appends a seq twice, never refuses one in range that was not appended)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(3, 8, 13, 64),
        fc.array(fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 40 }),
        (window, batches) => {
          const c = new Committed();
          const m = model(window);
          for (const b of batches) {
            const want = b.map((s) => m.expect(BigInt(s)));
            const got = kinds(c.run(b.map((s) => [9n, BigInt(s)] as [bigint, bigint]), window));
            expect(got).toEqual(want);
          }
          const seqs = [...c.rows.values()];
          expect(new Set(seqs).size).toBe(seqs.length);
        },
      ),
    );
  });

  it("property: pipelined seqs with any subset refused (BACKPRESSURE) and resent later, in any order, end with every seq appended exactly once", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.func(fc.boolean()),
        fc.array(fc.nat(), { maxLength: 300 }),
        fc.integer({ min: 1, max: 50 }),
        (n, refused, shuffle, batchSize) => {
          const c = new Committed();
          const window = 1024;
          const retry: bigint[] = [];
          const first: [bigint, bigint][] = [];
          for (let s = 1n; s <= BigInt(n); s++) (refused(Number(s)) ? retry.push(s) : first.push([3n, s]));
          for (let i = 0; i < first.length; i += batchSize) c.run(first.slice(i, i + batchSize), window);
          shuffle.forEach((r, i) => {
            const j = r % retry.length;
            if (retry.length > 0) [retry[i % retry.length], retry[j]] = [retry[j]!, retry[i % retry.length]!];
          });
          // resend everything (refused ones and, as a client after a reconnect would, a few appended ones)
          const again = [...retry, ...first.slice(0, 5).map(([, s]) => s)];
          for (let i = 0; i < again.length; i += batchSize) {
            const p = c.run(again.slice(i, i + batchSize).map((s) => [3n, s] as [bigint, bigint]), window);
            expect(p.outcomes.every((o) => o.kind !== "reject")).toBe(true);
          }
          expect(c.rows.size).toBe(n);
          expect(c.lastSeq).toBe(n);
        },
      ),
    );
  });
});

describe("ProducerCache", () => {
  it("evicts the least recently used producer beyond capacity", () => {
    const cache = new ProducerCache(2);
    cache.set(1n, recordAppend(undefined, 1n));
    cache.set(2n, recordAppend(undefined, 2n));
    cache.get(1n);
    cache.set(3n, recordAppend(undefined, 3n));
    expect(cache.get(2n)).toBeUndefined();
    expect(cache.get(1n)?.highest).toBe(1n);
    expect(cache.size).toBe(2);
  });
});
