import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../objects/mailbox/groupcommit";

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
