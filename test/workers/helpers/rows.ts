/** Test helper: what a Durable Object has stored, read inside the object (runInDurableObject). */
import { runInDurableObject } from "cloudflare:test";

/** Rows per table of the object's own SQLite tables (not the runtime's `_cf_*` ones); {} when it has none. */
export async function rowsOf(stub: DurableObjectStub): Promise<Record<string, number>> {
  return runInDurableObject(stub, (_o, state) => {
    const sql = state.storage.sql;
    const out: Record<string, number> = {};
    const tables = sql.exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite_%'").toArray();
    for (const { name } of tables) out[name] = sql.exec<{ n: number }>(`SELECT count(*) AS n FROM "${name}"`).one().n;
    return out;
  });
}

/** The tables of `rows` that are not empty, with their counts. */
export function nonEmpty(rows: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(rows).filter(([, n]) => n > 0));
}

/**
 * True when the object holds nothing but what a brand-new object of its kind
 * writes when it starts on empty storage: its name (`object_name`) and, for
 * a Partition, its first leader and delivery epochs. An object whose storage
 * a purge deleted has no rows at all; if the runtime evicted it meanwhile,
 * the test's own read starts it again — as a fresh object (epochs 1), which
 * proves its storage was deleted.
 */
export async function emptyOrFresh(stub: DurableObjectStub): Promise<boolean> {
  const rows = nonEmpty(await rowsOf(stub));
  const keys = Object.keys(rows);
  if (keys.length === 0) return true;
  if (keys.some((k) => k !== "object_name" && k !== "partition_meta") || (rows.object_name ?? 0) > 1) return false;
  if (!rows.partition_meta) return true;
  const meta = await runInDurableObject(stub, (_o, state) =>
    Object.fromEntries(state.storage.sql.exec<{ k: string; v: number }>("SELECT k, v FROM partition_meta").toArray().map((r) => [r.k, r.v])));
  return JSON.stringify(meta) === JSON.stringify({ delivery_epoch: 1, leader_epoch: 1 }) || JSON.stringify(meta) === JSON.stringify({ leader_epoch: 1, delivery_epoch: 1 });
}
