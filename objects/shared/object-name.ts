/**
 * The name a Durable Object is addressed by (`idFromName`), kept in its own
 * storage.
 *
 * `ctx.id.name` is undefined when the runtime starts an object to run its
 * alarm (after a restart of the runtime or an eviction; Cloudflare's
 * `DurableObjectId.name` docs note the alarm limitation, and local workerd
 * behaves the same) — and named calls arriving afterwards are served by that
 * same instance. Objects that derive their identity (tenant, topic,
 * partition, group) from their name would then fail every call until they
 * are evicted again. So the name is stored the first time the object runs
 * with it, and read back when it runs without it.
 *
 * Both readers also note the object's jurisdiction for its tenant
 * (jurisdiction.ts), so the object addresses its tenant's other objects in
 * the same one.
 */
import { noteOwnJurisdiction } from "./jurisdiction";

/**
 * Returns the object's name: `ctx.id.name`, remembered in table
 * `object_name` (one row; written once, when missing or different), or the
 * remembered one when the instance was started without a name. Null when
 * neither exists (an object never addressed by name).
 */
export function rememberedName(ctx: DurableObjectState): string | null {
  const sql = ctx.storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS object_name(k INTEGER PRIMARY KEY CHECK (k = 0), name TEXT NOT NULL)");
  let stored: string | null = null;
  for (const r of sql.exec<{ name: string }>("SELECT name FROM object_name WHERE k = 0")) stored = r.name;
  const name = ctx.id.name;
  noteOwnJurisdiction(ctx.id, name ?? stored);
  if (!name) return stored;
  if (stored !== name) sql.exec("INSERT OR REPLACE INTO object_name(k, name) VALUES (0, ?)", name);
  return name;
}

/**
 * The object's name as {@link rememberedName} finds it, without writing:
 * `unsaved` is true when the stored row is missing or different from
 * `ctx.id.name`; the caller then stores it with {@link rememberName} in its
 * first write transaction. For objects whose first write is their creation
 * (a Mailbox's CREATE), so the name costs no commit of its own (#14 item 3:
 * each commit is an fsync on workerd's one thread). Until it is stored, an
 * instance started without a name (an alarm) would not find it — so only
 * for objects that have nothing to do before that first write.
 */
export function nameToRemember(ctx: DurableObjectState): { name: string | null; unsaved: boolean } {
  const sql = ctx.storage.sql;
  let stored: string | null = null;
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'object_name'").toArray().length > 0) {
    for (const r of sql.exec<{ name: string }>("SELECT name FROM object_name WHERE k = 0")) stored = r.name;
  }
  const name = ctx.id.name;
  noteOwnJurisdiction(ctx.id, name ?? stored);
  if (!name) return { name: stored, unsaved: false };
  return { name, unsaved: stored !== name };
}

/**
 * Stores `name` as the remembered name: after the object deleted all its
 * storage (a purge) but lives on — possibly an instance started without
 * `ctx.id.name`, which only knows the name from memory — or in the first
 * write transaction of an object that used {@link nameToRemember}.
 */
export function rememberName(ctx: DurableObjectState, name: string | null): void {
  if (name === null) return;
  ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS object_name(k INTEGER PRIMARY KEY CHECK (k = 0), name TEXT NOT NULL)");
  ctx.storage.sql.exec("INSERT OR REPLACE INTO object_name(k, name) VALUES (0, ?)", name);
}
