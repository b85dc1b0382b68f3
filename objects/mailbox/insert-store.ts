/**
 * The multi-row INSERTs of a run of plain messages, with as few bound
 * values as the rows allow: their SQL text and bound values for
 * MailboxStore.appendVisibleMany (store.ts runs them). Pure: no platform
 * imports, so the statements can be tested without a database.
 *
 * workerd binds every SQL parameter at a cost of its own (its bind wrapper
 * formats an error-message string for each value, success or not: with
 * nine values a row that was ~12 % of workerd's CPU for a NATS client
 * pipelining 32 SENDs; perf, bench/tools/profile-mq9.ts). So only what
 * differs between rows is bound per row: msg_id is the first id plus the
 * row's place (a literal), `size` is `length()` of the row's payload
 * parameter, `create_ms` is shared, and each of lane, tags, expires_ms,
 * reply_to and correlation_id is a NULL literal when no row of the run has
 * one, one shared parameter when every row has the same, else one per row.
 * A pipelined run of SENDs without headers binds its payloads and three
 * numbers. The SQL text depends only on the row count and those choices;
 * it is built once per such pair (and workerd's statement cache keeps the
 * few in use prepared).
 */

/** What one stored row needs (a NewMessage without key, as appendVisibleMany stores it). */
export interface PlainRow {
  lane: number;
  tags: readonly string[];
  payload: Uint8Array;
  expiresMs: number | null;
  replyTo: string | null;
  correlationId: string | null;
}

/** A bound value. */
export type SqlValue = ArrayBuffer | string | number | null;

/** One statement: its SQL text and the values of `?1`, `?2`, …. */
export interface InsertStatement {
  sql: string;
  args: SqlValue[];
}

/** A Durable Object SQL statement takes at most this many bound values. */
export const MAX_BOUND_VALUES = 100;

/** Tags column form: ",a,b," (so `instr(tags, ',a,')` matches whole tags), or null. */
export function encodeTags(tags: readonly string[]): string | null {
  return tags.length ? `,${tags.join(",")},` : null;
}

/** How a column is written: a NULL literal, one shared parameter, or one per row. */
const enum Mode {
  Null = 0,
  Shared = 1,
  PerRow = 2,
}

/** The columns a run may share, in table order; `tags` is compared and bound encoded. */
const COLUMNS = ["lane", "tags", "expiresMs", "replyTo", "correlationId"] as const;
type Column = (typeof COLUMNS)[number];

/** The column's value for SQL. */
function value(r: PlainRow, c: Column): SqlValue {
  return c === "tags" ? encodeTags(r.tags) : r[c];
}

/** The modes of the five columns over `rows`. */
function modesOf(rows: readonly PlainRow[]): Mode[] {
  return COLUMNS.map((c) => {
    const first = value(rows[0]!, c);
    for (let i = 1; i < rows.length; i++) if (value(rows[i]!, c) !== first) return Mode.PerRow;
    return first === null ? Mode.Null : Mode.Shared;
  });
}

/** Rows per statement for `modes`: 2 + shared + rows × (per-row columns + payload) ≤ MAX_BOUND_VALUES. */
function fit(modes: readonly Mode[]): number {
  const shared = modes.filter((m) => m === Mode.Shared).length;
  const perRow = modes.filter((m) => m === Mode.PerRow).length + 1;
  return Math.max(1, Math.floor((MAX_BOUND_VALUES - 2 - shared) / perRow));
}

/** How many statements {@link planInserts} makes for `rows`. */
export function statementCount(rows: readonly PlainRow[]): number {
  return rows.length === 0 ? 0 : Math.ceil(rows.length / fit(modesOf(rows)));
}

/**
 * The INSERT statements storing `rows` with msg_ids `firstId`, `firstId + 1`, …
 * and `create_ms` `createMs`, in order, each within MAX_BOUND_VALUES;
 * `bytes` turns a payload into its bound value.
 */
export function planInserts(firstId: number, rows: readonly PlainRow[], createMs: number, bytes: (b: Uint8Array) => ArrayBuffer): InsertStatement[] {
  if (rows.length === 0) return [];
  const modes = modesOf(rows);
  const n = fit(modes);
  const out: InsertStatement[] = [];
  for (let o = 0; o < rows.length; o += n) {
    const end = Math.min(rows.length, o + n);
    const args: SqlValue[] = [firstId + o, createMs];
    for (let k = 0; k < COLUMNS.length; k++) if (modes[k] === Mode.Shared) args.push(value(rows[0]!, COLUMNS[k]!));
    for (let i = o; i < end; i++) {
      const r = rows[i]!;
      // per row, in column order: lane, tags, payload, expires_ms, reply_to, correlation_id (those bound per row)
      if (modes[0] === Mode.PerRow) args.push(r.lane);
      if (modes[1] === Mode.PerRow) args.push(encodeTags(r.tags));
      args.push(bytes(r.payload));
      if (modes[2] === Mode.PerRow) args.push(r.expiresMs);
      if (modes[3] === Mode.PerRow) args.push(r.replyTo);
      if (modes[4] === Mode.PerRow) args.push(r.correlationId);
    }
    out.push({ sql: sqlFor(end - o, modes), args });
  }
  return out;
}

/** SQL texts by row count and modes (a few in use; started over past SQL_CACHE_MAX). */
const sqlCache = new Map<string, string>();
const SQL_CACHE_MAX = 256;

/** The INSERT of `count` rows with `modes`, numbering parameters as planInserts binds them. */
function sqlFor(count: number, modes: readonly Mode[]): string {
  const key = `${count}:${modes.join("")}`;
  const hit = sqlCache.get(key);
  if (hit !== undefined) return hit;
  let next = 3; // ?1 first msg_id, ?2 create_ms
  const shared = modes.map((m) => (m === Mode.Null ? "NULL" : m === Mode.Shared ? `?${next++}` : ""));
  const values: string[] = [];
  for (let k = 0; k < count; k++) {
    const col = (i: number) => shared[i] || `?${next++}`;
    const lane = col(0);
    const tags = col(1);
    const p = `?${next++}`;
    values.push(`(?1 + ${k}, ${lane}, NULL, ${tags}, ${p}, length(${p}), ?2, ${col(2)}, ${col(3)}, ${col(4)})`);
  }
  const sql = `INSERT INTO messages (msg_id, lane, key, tags, payload, size, create_ms, expires_ms, reply_to, correlation_id) VALUES ${values.join(", ")}`;
  if (sqlCache.size >= SQL_CACHE_MAX) sqlCache.clear();
  sqlCache.set(key, sql);
  return sql;
}
