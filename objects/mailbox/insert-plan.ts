/**
 * The multi-row INSERTs of a run of plain messages, with as few bound
 * values as the rows allow (pure: no platform imports).
 *
 * workerd binds every SQL parameter at a cost of its own (its bind wrapper
 * formats an error-message string for each value, success or not: with
 * nine values a row that was ~12 % of workerd's CPU for a NATS client
 * pipelining 32 SENDs; perf, bench/tools/profile-mq9.ts). So only what
 * differs between rows is bound per row: msg_id is the first id plus the
 * row's place (a literal), `size` is `length()` of the row's payload
 * parameter, `create_ms` is shared, and each of lane, tags, expires_ms,
 * reply_to and correlation_id is a NULL literal when no row has one, one
 * shared parameter when every row has the same, else one per row. A
 * pipelined run of SENDs without headers binds its payloads and three
 * numbers. The SQL text depends only on the row count and those choices,
 * so workerd's statement cache keeps the few texts in use.
 */

/** What one stored row needs (a NewMessage without key, as appendVisibleMany stores it). */
export interface PlainRow {
  lane: number;
  /** The `tags` column (encodeTags), null without tags. */
  tags: string | null;
  payload: ArrayBuffer;
  expiresMs: number | null;
  replyTo: string | null;
  correlationId: string | null;
}

/** One statement: its SQL text and the values of `?1`, `?2`, …. */
export interface InsertStatement {
  sql: string;
  args: (ArrayBuffer | string | number | null)[];
}

/** A Durable Object SQL statement takes at most this many bound values. */
export const MAX_BOUND_VALUES = 100;

/** The columns that may be shared by the rows of a statement. */
const COLUMNS = ["lane", "tags", "expiresMs", "replyTo", "correlationId"] as const;
type Column = (typeof COLUMNS)[number];

/**
 * The INSERT statements storing `rows` with msg_ids `firstId`, `firstId + 1`, …
 * and `create_ms` `createMs`, in order, each within MAX_BOUND_VALUES.
 */
export function planInserts(firstId: number, rows: readonly PlainRow[], createMs: number): InsertStatement[] {
  const out: InsertStatement[] = [];
  const fit = rowsPerStatement(rows);
  for (let o = 0; o < rows.length; o += fit) out.push(statement(firstId + o, rows.slice(o, o + fit), createMs));
  return out;
}

/** How many statements {@link planInserts} makes for `rows` (without building them). */
export function statementCount(rows: readonly PlainRow[]): number {
  return Math.ceil(rows.length / rowsPerStatement(rows));
}

/**
 * Rows per statement: the per-row parameters (payload, and each column not
 * shared by the whole run) times the rows, plus at most 2 + 5 shared ones,
 * within MAX_BOUND_VALUES. (A statement's own rows may share more columns
 * than the run: then it binds fewer.)
 */
function rowsPerStatement(rows: readonly PlainRow[]): number {
  const perRow = COLUMNS.filter((c) => !uniform(rows, c)).length + 1;
  return Math.max(1, Math.floor((MAX_BOUND_VALUES - 2 - COLUMNS.length) / perRow));
}

/** True when every row has the same value in `c`. */
function uniform(rows: readonly PlainRow[], c: Column): boolean {
  for (let i = 1; i < rows.length; i++) if (rows[i]![c] !== rows[0]![c]) return false;
  return true;
}

function statement(firstId: number, rows: readonly PlainRow[], createMs: number): InsertStatement {
  const args: InsertStatement["args"] = [firstId, createMs];
  const param = (v: InsertStatement["args"][number]) => `?${args.push(v)}`;
  // per column: a literal NULL, one shared parameter, or null (one parameter per row)
  const shared = new Map<Column, string | null>();
  for (const c of COLUMNS) {
    if (!uniform(rows, c)) continue;
    const v = rows[0]![c];
    shared.set(c, v === null ? "NULL" : param(v));
  }
  const values = rows.map((r, k) => {
    const col = (c: Column) => shared.get(c) ?? param(r[c]);
    const [lane, tags, p] = [col("lane"), col("tags"), param(r.payload)]; // parameters numbered in column order
    return `(?1 + ${k}, ${lane}, NULL, ${tags}, ${p}, length(${p}), ?2, ${col("expiresMs")}, ${col("replyTo")}, ${col("correlationId")})`;
  });
  return {
    sql: `INSERT INTO messages (msg_id, lane, key, tags, payload, size, create_ms, expires_ms, reply_to, correlation_id) VALUES ${values.join(", ")}`,
    args,
  };
}
