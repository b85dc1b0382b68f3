/**
 * The ledger's storage as delivery runs (objects/partition/ledger-store.ts):
 * inline in the group's row while few, spilled to `delivery_runs` when
 * scattered ACKs fragment them, back inline once they merge; a restart
 * restores the same deliveries; rows of the old per-delivery table are
 * converted on start.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { partitionStub } from "../../../objects/partition/stub";
import { LedgerStore, type LoadFixes } from "../../../objects/partition/ledger-store";
import { SettleKind } from "../../../objects/partition/rpc";

const owner = { sessionId: "s1", subscriptionId: 1, memberId: 7 };
const limits = { ackWaitMs: 1000, maxAttempts: 3 };

describe("ledger storage as delivery runs", () => {
  it("inline → spilled → inline, restored exactly after a reload; old per-delivery rows are converted", async () => {
    const stub = partitionStub(env, "default", 1, 901, 0);
    await runInDurableObject(stub, (_o, state) => {
      const sql = state.storage.sql;
      const store = new LedgerStore(sql);
      const l = store.create("runs-g", 1);
      l.assign(1, owner);
      for (let s = 1; s <= 40; s++) l.delivered(s, 1000 + s, 9999);
      const row = () => sql.exec<{ runs: string | null }>("SELECT runs FROM consumer_groups WHERE gid = ?", l.gid).one().runs;
      const spilled = () => sql.exec<{ n: number }>("SELECT count(*) AS n FROM delivery_runs WHERE gid = ?", l.gid).one().n;
      const reload = () => new LedgerStore(sql).loadAll().get("runs-g")!;
      state.storage.transactionSync(() => store.flush(l));
      expect(JSON.parse(row()!)).toEqual([[1, 40, 1001, 1, 9999, 0, 0]]);
      // Every other one acked: 20 runs, spilled.
      for (let s = 2; s <= 40; s += 2) expect(l.settle(SettleKind.ACK, s, 1000 + s, 1, owner, 0, limits)).toBe(0);
      state.storage.transactionSync(() => store.flush(l));
      expect([row(), spilled()]).toEqual([null, 20]);
      expect([...reload().pending.values()]).toEqual([...l.pending.values()]);
      // One more ACK rewrites only what changed: one run fewer.
      expect(l.settle(SettleKind.ACK, 1, 1001, 1, owner, 0, limits)).toBe(0);
      state.storage.transactionSync(() => store.flush(l));
      expect(spilled()).toBe(19);
      expect([...reload().pending.values()]).toEqual([...l.pending.values()]);
      // All but the last three acked: inline again, spilled rows gone.
      for (let s = 3; s <= 33; s += 2) expect(l.settle(SettleKind.ACK, s, 1000 + s, 1, owner, 0, limits)).toBe(0);
      state.storage.transactionSync(() => store.flush(l));
      expect([JSON.parse(row()!).length, spilled()]).toEqual([3, 0]);
      const back = reload();
      expect([...back.pending.keys()]).toEqual([35, 37, 39]);
      expect([back.ackFloor(), back.next, back.counters.acked]).toEqual([35, 41, 37]);

      // An earlier release's per-delivery rows: read on start, written as runs, deleted.
      sql.exec("INSERT INTO deliveries(gid, seq, delivery_id, attempt, deadline, state, reason) VALUES (?, 50, 77, 2, 5, 1, 0), (?, 51, 78, 2, 5, 1, 0)", l.gid, l.gid);
      const fixes: LoadFixes = { count: 0 };
      const store2 = new LedgerStore(sql);
      const migrated = store2.loadAll(3, fixes);
      expect(fixes.migrated).toBe(true);
      state.storage.transactionSync(() => {
        for (const m of migrated.values()) store2.flush(m);
        store2.dropLegacy();
      });
      expect(sql.exec<{ n: number }>("SELECT count(*) AS n FROM deliveries").one().n).toBe(0);
      const after = new LedgerStore(sql).loadAll().get("runs-g")!;
      expect([...after.pending.keys()]).toEqual([35, 37, 39, 50, 51]);
      expect(after.pending.get(51)).toMatchObject({ deliveryId: 78, attempt: 2, state: 1 });
      expect(after.retries()).toEqual([50, 51]);
    });
  });
});
