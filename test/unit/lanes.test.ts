import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Lanes, type LanesOptions } from "../../objects/shared/lanes";

interface Item {
  id: string;
  kind?: string | null;
  w?: number;
  order?: number;
}

/** A host whose calls the test settles one by one; records every call and refusal. */
function scripted(opts: LanesOptions<Item> = {}) {
  const calls: { key: string; ids: string[]; done: () => void }[] = [];
  const refused: string[] = [];
  let settled = 0;
  const lanes = new Lanes<string, Item, string>({
    issue: (key, batch) => new Promise<void>((done) => calls.push({ key, ids: batch.map((i) => i.id), done })),
    refused: (item, why) => refused.push(`${item.id}:${why}`),
    settled: () => settled++,
  }, opts);
  const seen = () => calls.map((c) => `${c.key}[${c.ids.join(",")}]`);
  return { lanes, calls, refused, seen, settled: () => settled };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("Lanes", () => {
  it("one call in flight per lane: items arriving meanwhile go together in the next call; lanes run in parallel", async () => {
    const { lanes, calls, seen, settled } = scripted();
    lanes.submit("a", { id: "1" });
    lanes.submit("b", { id: "2" });
    lanes.submit("a", { id: "3" });
    lanes.flush();
    expect(seen()).toEqual(["a[1,3]", "b[2]"]);
    lanes.submit("a", { id: "4" });
    lanes.submit("a", { id: "5" });
    lanes.flush();
    expect(seen()).toEqual(["a[1,3]", "b[2]"]); // lane a busy
    calls[0]!.done();
    await tick();
    expect(seen()).toEqual(["a[1,3]", "b[2]", "a[4,5]"]);
    expect(settled()).toBe(1);
    calls[1]!.done();
    calls[2]!.done();
    await tick();
    expect(lanes.active).toBe(0);
  });

  it("admission is awaited in the lane: a waiting item holds up its lane only, a refused item is never issued and holds up nothing", async () => {
    const { lanes, refused, seen } = scripted();
    let admit!: (v: string | null) => void;
    lanes.submit("a", { id: "waits" }, new Promise((r) => (admit = r)));
    lanes.submit("a", { id: "behind" });
    lanes.submit("b", { id: "refused" }, Promise.resolve("rate"));
    lanes.submit("b", { id: "after-refused" });
    lanes.flush();
    expect(seen()).toEqual([]); // b's head has not been refused yet (its admission settles in a microtask)
    await tick();
    expect(refused).toEqual(["refused:rate"]);
    expect(seen()).toEqual(["b[after-refused]"]);
    admit(null);
    await tick();
    expect(seen()).toEqual(["b[after-refused]", "a[waits,behind]"]);
  });

  it("items whose admissions settle in the same round are issued together, without a flush from the owner", async () => {
    const { lanes, seen } = scripted();
    for (let i = 0; i < 5; i++) lanes.submit("a", { id: `${i}` }, Promise.resolve(null));
    await tick();
    expect(seen()).toEqual(["a[0,1,2,3,4]"]);
  });

  it("a failing admission admits (quotas fail open)", async () => {
    const { lanes, seen } = scripted();
    lanes.submit("a", { id: "x" }, Promise.reject(new Error("tenant object unreachable")));
    await tick();
    expect(seen()).toEqual(["a[x]"]);
  });

  it("kinds: consecutive items of one kind share a call, kind null goes alone; maxInFlight Infinity issues in order without waiting", async () => {
    const { lanes, seen } = scripted({ kind: (i) => i.kind, maxInFlight: Infinity });
    for (const [id, kind] of [["s1", "send"], ["s2", "send"], ["q", null], ["s3", "send"], ["f1", null], ["f2", null], ["s4", "send"]] as const) {
      lanes.submit("box", { id, kind });
    }
    lanes.flush();
    expect(seen()).toEqual(["box[s1,s2]", "box[q]", "box[s3]", "box[f1]", "box[f2]", "box[s4]"]);
  });

  it("maxWeight: a call takes items while its weight is below the bound; a heavier first item goes alone", () => {
    const { lanes, calls, seen } = scripted({ weight: (i) => i.w!, maxWeight: 10, maxInFlight: 3 });
    for (const [id, w] of [["a", 4], ["b", 4], ["c", 4], ["d", 20], ["e", 1]] as const) lanes.submit("k", { id, w });
    lanes.flush();
    expect(seen()).toEqual(["k[a,b,c]", "k[d]", "k[e]"]);
    expect(calls.length).toBe(3);
  });

  it("order: an idle lane waits while an older call is in flight on another lane", async () => {
    const { lanes, calls, seen } = scripted({ order: (i) => i.order! });
    lanes.submit("p0", { id: "0", order: 0 });
    lanes.submit("p1", { id: "1", order: 1 });
    lanes.flush();
    calls[0]!.done(); // p0 idle again; p1 (order 1) in flight
    await tick();
    lanes.submit("p0", { id: "2", order: 2 });
    lanes.flush();
    expect(seen()).toEqual(["p0[0]", "p1[1]"]); // 2 is newer than the call in flight on p1
    calls[1]!.done();
    await tick();
    expect(seen()).toEqual(["p0[0]", "p1[1]", "p0[2]"]);
  });

  it("every item is issued exactly once, in submission order per lane, whatever the admissions and completions", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ lane: fc.constantFrom("a", "b", "c"), admission: fc.constantFrom("none", "ok", "refused", "late") }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 3 }),
        async (items, maxInFlight) => {
          const issued: Record<string, string[]> = { a: [], b: [], c: [] };
          const refusedIds: string[] = [];
          const lanes = new Lanes<string, Item, string>({
            issue: async (key, batch) => {
              issued[key]!.push(...batch.map((i) => i.id));
              await tick();
            },
            refused: (item) => refusedIds.push(item.id),
          }, { maxInFlight });
          const late: (() => void)[] = [];
          items.forEach((it, n) => {
            const item = { id: `${n}` };
            if (it.admission === "none") lanes.submit(it.lane, item);
            else if (it.admission === "ok") lanes.submit(it.lane, item, Promise.resolve(null));
            else if (it.admission === "refused") lanes.submit(it.lane, item, Promise.resolve("no"));
            else lanes.submit(it.lane, item, new Promise((r) => late.push(() => r(null))));
            lanes.flush();
          });
          await tick();
          for (const go of late) go();
          for (let i = 0; i < 50 && lanes.active > 0; i++) await tick();
          expect(lanes.active).toBe(0);
          for (const lane of ["a", "b", "c"]) {
            const want = items.map((it, n) => ({ ...it, n })).filter((it) => it.lane === lane && it.admission !== "refused").map((it) => `${it.n}`);
            expect(issued[lane]).toEqual(want);
          }
          expect(refusedIds).toEqual(items.map((it, n) => ({ ...it, n })).filter((it) => it.admission === "refused").map((it) => `${it.n}`));
        },
      ),
      { numRuns: 60 },
    );
  });
});
