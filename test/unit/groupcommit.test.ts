import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../objects/shared/groupcommit";

/** A fake storage: `commit()` makes everything written so far durable. */
function fakeStorage() {
  const commits: string[][] = [];
  let pending: string[] = [];
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  return {
    commits,
    write: (x: string) => pending.push(x),
    sync: () => new Promise<void>((resolve, reject) => waiters.push({ resolve, reject })),
    commit() {
      commits.push(pending);
      pending = [];
      const w = waiters;
      waiters = [];
      w.forEach((x) => x.resolve());
    },
    fail(e: unknown) {
      const w = waiters;
      waiters = [];
      w.forEach((x) => x.reject(e));
    },
  };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("GroupCommit", () => {
  it("applies a lone item at once and batches items that arrive during a commit", async () => {
    const s = fakeStorage();
    const gc = new GroupCommit<string, string>((x) => (s.write(x), `ok ${x}`), s.sync, () => "failed");
    expect(gc.submit("a")).toBe("ok a");
    const b = gc.submit("b");
    const c = gc.submit("c");
    expect(gc.queued).toBe(2);
    s.commit(); // "a" durable → b and c applied together
    await tick();
    expect(await b).toBe("ok b");
    expect(await c).toBe("ok c");
    s.commit();
    await tick();
    expect(s.commits).toEqual([["a"], ["b", "c"]]);
    expect(gc.submit("d")).toBe("ok d"); // idle again: immediate
  });

  it("submitAll applies a group together: at once when idle, after the commit in flight otherwise", async () => {
    const s = fakeStorage();
    const gc = new GroupCommit<string, string>((x) => (s.write(x), `ok ${x}`), s.sync, () => "failed");
    expect(gc.submitAll(["a", "b"])).toEqual(["ok a", "ok b"]);
    const later = gc.submitAll(["c", "d"]);
    const single = gc.submit("e");
    s.commit();
    await tick();
    expect(await later).toEqual(["ok c", "ok d"]);
    expect(await single).toBe("ok e");
    s.commit();
    await tick();
    expect(s.commits).toEqual([["a", "b"], ["c", "d", "e"]]);
    expect(gc.submitAll([])).toEqual([]);
  });

  it("with applyMany: submitAll and every run of waiting items go through it in one call; operations in between keep their place", async () => {
    const s = fakeStorage();
    const calls: string[][] = [];
    const gc = new GroupCommit<string, string>(
      (x) => (s.write(x), `ok ${x}`),
      s.sync,
      () => "failed",
      (xs) => (calls.push([...xs]), xs.map((x) => (s.write(x), `many ${x}`))),
    );
    expect(gc.submitAll(["a", "b"])).toEqual(["many a", "many b"]);
    const c = gc.submit("c");
    const d = gc.submitAll(["d", "e"]);
    const op = gc.after(() => (s.write("op"), "op done"));
    const f = gc.submit("f");
    s.commit();
    await tick();
    expect([await c, await d, await op, await f]).toEqual(["many c", ["many d", "many e"], "op done", "ok f"]);
    expect(calls).toEqual([["a", "b"], ["c", "d", "e"]]); // a lone item (f) goes through apply
    s.commit();
    await tick();
    expect(s.commits).toEqual([["a", "b"], ["c", "d", "e", "op", "f"]]);
    expect(gc.submitAll(["g"])).toEqual(["ok g"]);
  });

  it("answers queued items with the failure reply when storage fails", async () => {
    const s = fakeStorage();
    const gc = new GroupCommit<string, string>((x) => (s.write(x), `ok ${x}`), s.sync, (e) => `failed: ${String(e)}`);
    gc.submit("a");
    const b = gc.submit("b");
    s.fail("disk");
    expect(await b).toBe("failed: disk");
    expect(gc.submit("c")).toBe("ok c");
  });
});

describe("GroupCommit.after", () => {
  it("runs at once when nothing waits, otherwise in order among the waiting items, in their turn", async () => {
    const s = fakeStorage();
    const log: string[] = [];
    const gc = new GroupCommit<string, string>((x) => (s.write(x), log.push(`apply ${x}`), `ok ${x}`), s.sync, () => "failed");
    expect(gc.after(() => (log.push("read 1"), 1))).toBe(1); // idle
    gc.submit("a"); // applied now, commit in flight
    expect(gc.after(() => (log.push("read 2"), 2))).toBe(2); // nothing waits: still at once
    const b = gc.submit("b");
    const read3 = gc.after(() => (log.push("read 3"), 3));
    const c = gc.submit("c");
    expect(gc.queued).toBe(2);
    expect(log).toEqual(["read 1", "apply a", "read 2"]);
    s.commit();
    await tick();
    expect(await read3).toBe(3);
    expect(log).toEqual(["read 1", "apply a", "read 2", "apply b", "read 3", "apply c"]);
    expect([await b, await c]).toEqual(["ok b", "ok c"]);
  });

  it("still runs queued operations when the commit in flight fails, and passes their exceptions on", async () => {
    const s = fakeStorage();
    const gc = new GroupCommit<string, string>((x) => (s.write(x), `ok ${x}`), s.sync, () => "failed");
    gc.submit("a");
    const b = gc.submit("b");
    const read = gc.after(() => "read");
    const bad = gc.after(() => {
      throw new Error("boom");
    });
    s.fail(new Error("disk"));
    expect(await b).toBe("failed");
    expect(await read).toBe("read");
    await expect(bad).rejects.toThrow("boom");
  });
});
