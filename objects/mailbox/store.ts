/**
 * SQLite storage of one Mailbox (docs/mq9.md "Storage"). Synchronous calls
 * on `ctx.storage.sql`; callers wrap multi-row changes in `transactionSync`.
 *
 * Tables:
 * - `mailbox`  one row: address, creation time, TTL, and `next_msg_id`, a
 *              floor for the next msg_id written only when messages are
 *              removed (the next id is max(next_msg_id, MAX(msg_id) + 1), so
 *              an append needs no second write).
 * - `messages` visible messages: msg_id (PK), lane, key (unique when set),
 *              tags (",a,b,"), payload BLOB, create_ms, expires_ms,
 *              reply_to and correlation_id (the conversation extension;
 *              columns added later, see upgradeSchema; partial index on
 *              correlation_id for QUERY).
 * - `delayed`  messages waiting for their delay; get a msg_id when due
 *              (reply_to, correlation_id as in `messages`).
 * - `schedule` (kind, ref, due_ms): every timed event; drives the one alarm.
 * - `groups`   consumer-group cursors (see cursor.ts): floors, last batch,
 *              highest delivered msg_id per lane (`delivered`, added after
 *              the first release: rows from before it read as null).
 * - `pushes`, `push_open`, `dead_letter_refs`: push subscriptions
 *              (push/store.ts; created on load in mailboxes from before
 *              them). `messages.dead_letter` (JSON, added later) is set on
 *              the copies a dead-letter mailbox holds.
 *
 * Adding a column: add it to SCHEMA (new mailboxes) and to ADDED_COLUMNS
 * (mailboxes a released version created without it; added when the object
 * loads). Existing rows read the new column as NULL or its DEFAULT.
 */
import { LANE_COUNT, bytesToBase64, priorityOfLane, type DeadLetterInfo, type Lane, type Mq9Message, type QuerySpec } from "../../wire/mq9";
import { decodeCursor, encodeCursor, type GroupCursor } from "./cursor";
import { ScheduleKind } from "./schedule";
import { PUSH_SCHEMA, PUSH_TABLES } from "./push/store";
import { encodeTags, planInserts, statementCount } from "./insert-store";

export { encodeTags } from "./insert-store";

/** The mailbox row, cached in memory by the object. */
export interface MailboxMeta {
  address: string;
  createdMs: number;
  /** Mailbox TTL, seconds (0 = never). */
  ttlSec: number;
  expiresMs: number | null;
  /** msg_id the next visible message gets. */
  nextMsgId: number;
}

/** A message to store (visible now or after a delay). */
export type { NewMessage } from "./send-path";
import type { NewMessage } from "./send-path";

/** A visible message as read for a reply. */
export interface StoredMessage {
  msgId: number;
  lane: Lane;
  key: string | null;
  tags: string | null;
  payload: ArrayBuffer;
  size: number;
  createMs: number;
  replyTo: string | null;
  correlationId: string | null;
  /** DeadLetterInfo JSON of a dead-letter copy, or null. */
  deadLetter: string | null;
}

type Row = Record<string, SqlStorageValue>;

const CORRELATION_INDEX = "CREATE INDEX IF NOT EXISTS messages_by_correlation ON messages (correlation_id) WHERE correlation_id IS NOT NULL";

/** Columns added after the first release, per table: created by upgradeSchema in mailboxes that predate them. */
const ADDED_COLUMNS: readonly { table: string; column: string; type: string }[] = [
  { table: "groups", column: "delivered", type: "TEXT" }, // released main 8e7de12 … 70ff807 had groups(name, floors, batch)
  { table: "messages", column: "reply_to", type: "TEXT" },
  { table: "messages", column: "correlation_id", type: "TEXT" },
  { table: "delayed", column: "reply_to", type: "TEXT" },
  { table: "delayed", column: "correlation_id", type: "TEXT" },
  { table: "messages", column: "dead_letter", type: "TEXT" }, // push delivery's dead-letter copies (issue 17)
  { table: "pushes", column: "last_failure_ms", type: "INTEGER" }, // when the last failed push attempt ended (issue 28)
];

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS mailbox (id INTEGER PRIMARY KEY CHECK (id = 1), address TEXT NOT NULL,
     created_ms INTEGER NOT NULL, ttl_s INTEGER NOT NULL, expires_ms INTEGER, next_msg_id INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS messages (msg_id INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT,
     payload BLOB NOT NULL, size INTEGER NOT NULL, create_ms INTEGER NOT NULL, expires_ms INTEGER,
     reply_to TEXT, correlation_id TEXT, dead_letter TEXT)`,
  `CREATE INDEX IF NOT EXISTS messages_by_lane ON messages (lane, msg_id)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS messages_by_key ON messages (key) WHERE key IS NOT NULL`,
  CORRELATION_INDEX,
  `CREATE TABLE IF NOT EXISTS delayed (seq INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT,
     payload BLOB NOT NULL, size INTEGER NOT NULL, sent_ms INTEGER NOT NULL, expires_ms INTEGER,
     reply_to TEXT, correlation_id TEXT)`,
  `CREATE TABLE IF NOT EXISTS schedule (kind TEXT NOT NULL, ref INTEGER NOT NULL, due_ms INTEGER NOT NULL,
     PRIMARY KEY (kind, ref))`,
  `CREATE INDEX IF NOT EXISTS schedule_by_due ON schedule (due_ms)`,
  `CREATE TABLE IF NOT EXISTS groups (name TEXT PRIMARY KEY, floors TEXT NOT NULL, batch TEXT, delivered TEXT)`,
  ...PUSH_SCHEMA,
];
const TABLES = ["mailbox", "messages", "delayed", "schedule", "groups", ...PUSH_TABLES];

/**
 * Tables added after a release created mailboxes without them: created
 * (IF NOT EXISTS) when such a mailbox loads (upgradeSchema).
 */
const ADDED_TABLES: readonly string[] = [...PUSH_SCHEMA]; // push delivery (issue 17)


/** Inverse of encodeTags. */
export function decodeTags(col: string | null): string[] {
  return col ? col.slice(1, -1).split(",") : [];
}

/** The reply form of a stored message (payload base64, create_time in unix seconds). */
export function toMq9Message(m: StoredMessage): Mq9Message {
  return {
    msg_id: m.msgId,
    payload: bytesToBase64(new Uint8Array(m.payload)),
    priority: priorityOfLane(m.lane),
    create_time: Math.floor(m.createMs / 1000),
    key: m.key,
    tags: decodeTags(m.tags),
    ...(m.replyTo !== null ? { reply_to: m.replyTo } : {}),
    ...(m.correlationId !== null ? { correlation_id: m.correlationId } : {}),
    ...(m.deadLetter !== null ? { dead_letter: JSON.parse(m.deadLetter) as DeadLetterInfo } : {}),
  };
}

function blob(bytes: Uint8Array): ArrayBuffer {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer
    ? bytes.buffer
    : (bytes.slice().buffer as ArrayBuffer);
}

function toStored(r: Row): StoredMessage {
  return {
    msgId: r.msg_id as number,
    lane: r.lane as Lane,
    key: r.key as string | null,
    tags: r.tags as string | null,
    payload: r.payload as ArrayBuffer,
    size: r.size as number,
    createMs: r.create_ms as number,
    replyTo: r.reply_to as string | null,
    correlationId: r.correlation_id as string | null,
    deadLetter: (r.dead_letter as string | null) ?? null,
  };
}

/** Schedule rows per INSERT (3 bound values a row; a Durable Object SQL statement takes at most 100). */
const SCHEDULE_ROWS_PER_INSERT = 33;

const SELECT_MSG = "SELECT msg_id, lane, key, tags, payload, size, create_ms, reply_to, correlation_id, dead_letter FROM messages";

/** Storage access for one mailbox. */
export class MailboxStore {
  constructor(private readonly sql: SqlStorage) {}

  /** True when the schema exists (a mailbox was created and not purged). */
  hasSchema(): boolean {
    return this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'mailbox'").toArray().length > 0;
  }

  /**
   * Brings a schema created by an older version up to date: creates the
   * tables of ADDED_TABLES that are missing, adds the columns of
   * ADDED_COLUMNS that a table lacks (existing rows read them as null) and
   * the indexes on them. Idempotent; cheap when current.
   */
  private upgradeSchema(): void {
    for (const stmt of ADDED_TABLES) this.sql.exec(stmt);
    const tables = new Set<string>();
    const present = new Set<string>();
    for (const r of this.sql.exec(
      "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name IN ('groups', 'messages', 'delayed', 'pushes')",
    )) {
      tables.add(r.t as string);
      present.add(`${r.t as string}.${r.c as string}`);
    }
    for (const { table, column, type } of ADDED_COLUMNS) {
      if (tables.has(table) && !present.has(`${table}.${column}`)) this.sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
    }
    if (tables.has("messages")) this.sql.exec(CORRELATION_INDEX);
  }

  /** Loads the mailbox row (upgrading an older schema first), or null when there is no mailbox. */
  loadMeta(): MailboxMeta | null {
    if (!this.hasSchema()) return null;
    this.upgradeSchema();
    const r = this.sql.exec(
      "SELECT address, created_ms, ttl_s, expires_ms, MAX(next_msg_id, (SELECT COALESCE(MAX(msg_id) + 1, 0) FROM messages)) AS next_id FROM mailbox WHERE id = 1",
    ).toArray()[0];
    if (!r) return null;
    return {
      address: r.address as string,
      createdMs: r.created_ms as number,
      ttlSec: r.ttl_s as number,
      expiresMs: r.expires_ms as number | null,
      nextMsgId: r.next_id as number,
    };
  }

  /** Creates the schema and the mailbox row (with its TTL schedule row). */
  createMailbox(meta: MailboxMeta): void {
    for (const stmt of SCHEMA) this.sql.exec(stmt);
    this.sql.exec(
      "INSERT INTO mailbox (id, address, created_ms, ttl_s, expires_ms, next_msg_id) VALUES (1, ?, ?, ?, ?, ?)",
      meta.address, meta.createdMs, meta.ttlSec, meta.expiresMs, meta.nextMsgId,
    );
    if (meta.expiresMs !== null) this.schedule(ScheduleKind.mailbox, 0, meta.expiresMs);
  }

  /**
   * Bytes of the stored messages, visible and delayed: payload plus the
   * UTF-8 bytes of key and tags as stored (tags column `,a,b,`), reply-to
   * and correlation id (ASCII). Metadata counts because a SEND can store up
   * to ~4.9 kB of it with an empty payload (docs/operations.md
   * `mortarmq_stored_bytes`); it matches sendMetadataBytes (wire/mq9).
   */
  storedBytes(): number {
    const sum = (t: string) => this.sql.exec<{ b: number | null }>(
      `SELECT sum(size + coalesce(length(CAST(key AS BLOB)), 0) + coalesce(length(CAST(tags AS BLOB)), 0)
         + coalesce(length(reply_to), 0) + coalesce(length(correlation_id), 0)) AS b FROM ${t}`,
    ).one().b ?? 0;
    return sum("messages") + sum("delayed");
  }

  /** Drops every table: the mailbox and all its data are gone. */
  dropAll(): void {
    for (const t of TABLES) this.sql.exec(`DROP TABLE IF EXISTS ${t}`);
  }

  /**
   * True when appending `ms` (appendVisible for one message,
   * appendVisibleMany for several) is ONE SQL statement — no key to
   * compact, no TTL to schedule, rows for one INSERT of insert-store.ts
   * (at least 19, 97 without headers) — which is atomic by itself: the
   * caller needs no `transactionSync` around it (a savepoint and its
   * release were a visible part of a SEND's CPU).
   */
  appendIsOneStatement(ms: readonly NewMessage[]): boolean {
    for (const m of ms) if (m.key !== null || m.expiresMs !== null) return false;
    return statementCount(ms) <= 1;
  }

  /**
   * Appends a visible message with msg_id `msgId` (greater than every stored
   * id): applies key compaction (deletes the older message with the same
   * key; the new message stays the highest id, so no counter write is
   * needed) and schedules its TTL.
   */
  appendVisible(msgId: number, m: NewMessage, createMs: number): void {
    if (m.key !== null) {
      for (const r of this.sql.exec("DELETE FROM messages WHERE key = ? RETURNING msg_id", m.key).toArray()) {
        this.unschedule(ScheduleKind.expire, r.msg_id as number);
      }
    }
    this.sql.exec(
      "INSERT INTO messages (msg_id, lane, key, tags, payload, size, create_ms, expires_ms, reply_to, correlation_id, dead_letter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      msgId, m.lane, m.key, encodeTags(m.tags), blob(m.payload), m.payload.byteLength, createMs, m.expiresMs, m.replyTo, m.correlationId, m.deadLetter ?? null,
    );
    if (m.expiresMs !== null) this.schedule(ScheduleKind.expire, msgId, m.expiresMs);
  }

  /**
   * Appends visible messages without keys, msg_ids `firstId`, `firstId + 1`,
   * … (greater than every stored id), as appendVisible would one at a time,
   * in the multi-row INSERTs of insert-store.ts (one statement for a
   * pipelined round of SENDs instead of one per SEND, binding only what
   * differs between rows: the SQL calls and their bound values were the
   * largest part of a pipelined SEND's CPU) and their TTL schedule rows.
   * @throws Error when a message has a key (use appendVisible: compaction)
   */
  appendVisibleMany(firstId: number, ms: readonly NewMessage[], createMs: number): void {
    for (const m of ms) if (m.key !== null) throw new Error("appendVisibleMany: a message with a key");
    for (const st of planInserts(firstId, ms, createMs, blob)) this.sql.exec(st.sql, ...st.args);
    const timed: number[] = [];
    ms.forEach((m, i) => {
      if (m.expiresMs !== null) timed.push(firstId + i, m.expiresMs);
    });
    for (let o = 0; o < timed.length; o += 2 * SCHEDULE_ROWS_PER_INSERT) {
      const part = timed.slice(o, o + 2 * SCHEDULE_ROWS_PER_INSERT);
      this.sql.exec(
        `INSERT INTO schedule (kind, ref, due_ms) VALUES ${",(?, ?, ?)".repeat(part.length / 2).slice(1)} ON CONFLICT (kind, ref) DO UPDATE SET due_ms = excluded.due_ms`,
        ...part.flatMap((v, i) => (i % 2 === 0 ? [ScheduleKind.expire, v] : [v])),
      );
    }
  }

  /** Stores a delayed message due at `dueMs`. */
  addDelayed(m: NewMessage, dueMs: number): void {
    const seq = this.sql.exec(
      "INSERT INTO delayed (lane, key, tags, payload, size, sent_ms, expires_ms, reply_to, correlation_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
      m.lane, m.key, encodeTags(m.tags), blob(m.payload), m.payload.byteLength, m.sentMs, m.expiresMs, m.replyTo, m.correlationId,
    ).one().seq as number;
    this.schedule(ScheduleKind.deliver, seq, dueMs);
  }

  /**
   * Up to `limit` delayed messages due at `nowMs`, in (due time, send order),
   * removed from `delayed` and the schedule. Returns them with their due time.
   */
  takeDueDelayed(nowMs: number, limit: number): { m: NewMessage; dueMs: number }[] {
    const rows = this.sql.exec(
      `SELECT s.ref AS seq, s.due_ms, d.seq AS found, d.lane, d.key, d.tags, d.payload, d.sent_ms, d.expires_ms, d.reply_to, d.correlation_id
         FROM schedule s LEFT JOIN delayed d ON d.seq = s.ref
        WHERE s.kind = ? AND s.due_ms <= ? ORDER BY s.due_ms, s.ref LIMIT ?`,
      ScheduleKind.deliver, nowMs, limit,
    ).toArray();
    const out: { m: NewMessage; dueMs: number }[] = [];
    for (const r of rows) {
      this.sql.exec("DELETE FROM delayed WHERE seq = ?", r.seq);
      this.unschedule(ScheduleKind.deliver, r.seq as number);
      if (r.found === null) continue; // orphan schedule row: drop it so the alarm cannot spin on it
      out.push({
        dueMs: r.due_ms as number,
        m: {
          lane: r.lane as Lane,
          key: r.key as string | null,
          tags: decodeTags(r.tags as string | null),
          payload: new Uint8Array(r.payload as ArrayBuffer),
          sentMs: r.sent_ms as number,
          expiresMs: r.expires_ms as number | null,
          replyTo: r.reply_to as string | null,
          correlationId: r.correlation_id as string | null,
        },
      });
    }
    return out;
  }

  /**
   * Deletes up to `limit` messages whose TTL ended at `nowMs`; returns how
   * many. `nextMsgId` is persisted when anything was removed.
   */
  expireDue(nowMs: number, limit: number, nextMsgId: number): number {
    const refs = this.sql.exec(
      "DELETE FROM schedule WHERE rowid IN (SELECT rowid FROM schedule WHERE kind = ? AND due_ms <= ? LIMIT ?) RETURNING ref",
      ScheduleKind.expire, nowMs, limit,
    ).toArray();
    for (const r of refs) this.sql.exec("DELETE FROM messages WHERE msg_id = ?", r.ref);
    if (refs.length) this.saveNextId(nextMsgId);
    return refs.length;
  }

  /** Earliest due time in the schedule, push rows left out (the push driver keeps its own, push/store.ts), or null. */
  earliestDue(): number | null {
    if (!this.hasSchema()) return null;
    return (this.sql.exec("SELECT MIN(due_ms) AS t FROM schedule WHERE kind <> ?", ScheduleKind.push).one().t as number | null) ?? null;
  }

  /** The visible, unexpired message `msgId`, or null. */
  message(msgId: number, nowMs: number): StoredMessage | null {
    const r = this.sql.exec(`${SELECT_MSG} WHERE msg_id = ? AND (expires_ms IS NULL OR expires_ms > ?)`, msgId, nowMs).toArray()[0];
    return r ? toStored(r) : null;
  }

  /**
   * Messages of `lane` with msg_id ≥ `fromId` not expired at `nowMs`, FIFO,
   * at most `limit`; read lazily so the caller can stop at its byte budget.
   */
  *readLane(lane: Lane, fromId: number, limit: number, nowMs: number): Generator<StoredMessage> {
    const cursor = this.sql.exec(
      `${SELECT_MSG} WHERE lane = ? AND msg_id >= ? AND (expires_ms IS NULL OR expires_ms > ?) ORDER BY msg_id LIMIT ?`,
      lane, fromId, nowMs, limit,
    );
    for (const r of cursor) yield toStored(r);
  }

  /** Highest stored msg_id per lane (index = lane), -1 for an empty lane. */
  laneTops(): number[] {
    const tops = Array.from({ length: LANE_COUNT }, () => -1);
    if (!this.hasSchema()) return tops;
    for (const r of this.sql.exec("SELECT lane, MAX(msg_id) AS top FROM messages GROUP BY lane")) tops[r.lane as number] = r.top as number;
    return tops;
  }

  /** First msg_id whose create time is ≥ `ms`, or null. */
  firstIdCreatedAtOrAfter(ms: number): number | null {
    return (this.sql.exec("SELECT MIN(msg_id) AS id FROM messages WHERE create_ms >= ?", ms).one().id as number | null) ?? null;
  }

  /** Lane of a stored message, or null. */
  laneOf(msgId: number): Lane | null {
    const r = this.sql.exec("SELECT lane FROM messages WHERE msg_id = ?", msgId).toArray()[0];
    return r ? (r.lane as Lane) : null;
  }

  /** Deletes one visible message; false when there is none with that id. Persists `nextMsgId` when it did. */
  deleteMessage(msgId: number, nextMsgId: number): boolean {
    const gone = this.sql.exec("DELETE FROM messages WHERE msg_id = ? RETURNING msg_id", msgId).toArray().length > 0;
    if (gone) {
      this.unschedule(ScheduleKind.expire, msgId);
      this.saveNextId(nextMsgId);
    }
    return gone;
  }

  /** Persists the next-msg_id floor (needed once the highest id may be gone). */
  private saveNextId(nextMsgId: number): void {
    this.sql.exec("UPDATE mailbox SET next_msg_id = MAX(next_msg_id, ?) WHERE id = 1", nextMsgId);
  }

  /**
   * QUERY: visible, unexpired messages matching every given filter (AND),
   * newest first, at most `spec.limit` rows, read lazily (the caller applies
   * the byte budget and reverses to msg_id order).
   */
  *queryNewestFirst(spec: QuerySpec, nowMs: number): Generator<StoredMessage> {
    const where = ["(expires_ms IS NULL OR expires_ms > ?)"];
    const args: SqlStorageValue[] = [nowMs];
    if (spec.key !== null) {
      where.push("key = ?");
      args.push(spec.key);
    }
    if (spec.sinceSec !== null) {
      where.push("create_ms >= ?");
      args.push(spec.sinceSec * 1000);
    }
    for (const tag of spec.tags) {
      where.push("instr(tags, ?) > 0");
      args.push(`,${tag},`);
    }
    if (spec.correlationId !== null) {
      where.push("correlation_id = ?");
      args.push(spec.correlationId);
    }
    const cursor = this.sql.exec(`${SELECT_MSG} WHERE ${where.join(" AND ")} ORDER BY msg_id DESC LIMIT ?`, ...args, spec.limit);
    for (const r of cursor) yield toStored(r);
  }

  /** A group's cursor, or null when the group never fetched. */
  loadGroup(name: string): GroupCursor | null {
    const r = this.sql.exec("SELECT floors, batch, delivered FROM groups WHERE name = ?", name).toArray()[0];
    return r ? decodeCursor(r.floors as string, r.batch as string | null, r.delivered as string | null) : null;
  }

  /** Unexpired visible messages and their payload bytes per lane (index = lane); a scan of `messages`. */
  laneCounts(nowMs: number): { messages: number; bytes: number }[] {
    const out = Array.from({ length: LANE_COUNT }, () => ({ messages: 0, bytes: 0 }));
    for (const r of this.sql.exec("SELECT lane, count(*) AS n, sum(size) AS b FROM messages WHERE expires_ms IS NULL OR expires_ms > ? GROUP BY lane", nowMs)) {
      out[r.lane as number] = { messages: r.n as number, bytes: (r.b as number | null) ?? 0 };
    }
    return out;
  }

  /** Delayed messages not yet visible. */
  delayedCount(): number {
    return this.sql.exec("SELECT count(*) AS n FROM delayed").one().n as number;
  }

  /** Up to `limit` groups by name with their cursors. */
  groupsPage(limit: number): { name: string; cursor: GroupCursor }[] {
    return this.sql.exec("SELECT name, floors, batch, delivered FROM groups ORDER BY name LIMIT ?", limit).toArray()
      .map((r) => ({ name: r.name as string, cursor: decodeCursor(r.floors as string, r.batch as string | null, r.delivered as string | null) }));
  }

  /** Number of stored consumer groups. */
  groupCount(): number {
    return this.sql.exec("SELECT count(*) AS n FROM groups").one().n as number;
  }

  /** Writes a group's cursor. */
  saveGroup(name: string, c: GroupCursor): void {
    const e = encodeCursor(c);
    this.sql.exec(
      `INSERT INTO groups (name, floors, batch, delivered) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET floors = excluded.floors, batch = excluded.batch, delivered = excluded.delivered`,
      name, e.floors, e.batch, e.delivered,
    );
  }

  private schedule(kind: ScheduleKind, ref: number, dueMs: number): void {
    this.sql.exec(
      "INSERT INTO schedule (kind, ref, due_ms) VALUES (?, ?, ?) ON CONFLICT (kind, ref) DO UPDATE SET due_ms = excluded.due_ms",
      kind, ref, dueMs,
    );
  }

  private unschedule(kind: ScheduleKind, ref: number): void {
    this.sql.exec("DELETE FROM schedule WHERE kind = ? AND ref = ?", kind, ref);
  }
}
