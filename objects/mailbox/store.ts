/**
 * SQLite storage of one Mailbox (docs/mq9.md "Storage"). Synchronous calls
 * on `ctx.storage.sql`; callers wrap multi-row changes in `transactionSync`.
 *
 * Tables:
 * - `mailbox`  one row: address, creation time, TTL, and `next_msg_id`, a
 *              floor for the next msg_id written only when messages are
 *              removed (the next id is max(next_msg_id, MAX(msg_id) + 1), so
 *              an append needs no second write).
 * - `segments`, `keys` visible messages, many to a row: the messages of
 *              one SEND commit in one segment, a `keys` row only for a
 *              message with a key (segment-store.ts, issue #26). Mailboxes
 *              from before them had one `messages` row per message; they
 *              are moved into segments on load (legacy-messages-store.ts).
 * - `delayed`  messages waiting for their delay; get a msg_id when due
 *              (reply_to, correlation_id as in `messages`).
 * - `schedule` (kind, ref, due_ms): every timed event; drives the one alarm
 *              (message TTLs: one row per segment, ref = seg_id).
 * - `groups`   consumer-group cursors (see cursor.ts): floors, last batch,
 *              highest delivered msg_id per lane (`delivered`, added after
 *              the first release: rows from before it read as null).
 * - `pushes`, `push_open`, `dead_letter_refs`: push subscriptions
 *              (push/store.ts; created on load in mailboxes from before
 *              them). A segment entry's dead_letter (JSON) is set on the
 *              copies a dead-letter mailbox holds.
 *
 * Adding a column: add it to SCHEMA (new mailboxes) and to ADDED_COLUMNS
 * (mailboxes a released version created without it; added when the object
 * loads). Existing rows read the new column as NULL or its DEFAULT.
 */
import { LANE_COUNT, bytesToBase64, priorityOfLane, type DeadLetterInfo, type Lane, type Mq9Message, type QuerySpec } from "../../wire/mq9";
import { decodeCursor, encodeCursor, type GroupCursor } from "./cursor";
import { ScheduleKind } from "./schedule";
import { PUSH_SCHEMA, PUSH_TABLES } from "./push/store";
import { SEGMENT_MAX_BYTES, entryBound, type SegmentEntry } from "./segment-pack";
import { SEGMENT_SCHEMA, SEGMENT_TABLES, SegmentStore } from "./segment-store";
import { migrateLegacyMessages } from "./legacy-messages-store";

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
  /** The payload: a view into the segment's body as read (copy it before keeping it or sending it over RPC). */
  payload: Uint8Array;
  size: number;
  createMs: number;
  replyTo: string | null;
  correlationId: string | null;
  /** DeadLetterInfo JSON of a dead-letter copy, or null. */
  deadLetter: string | null;
}

/** Columns added after the first release, per table: created by upgradeSchema in mailboxes that predate them (`messages`: the legacy table, read once by its migration). */
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
  ...SEGMENT_SCHEMA,
  `CREATE TABLE IF NOT EXISTS delayed (seq INTEGER PRIMARY KEY, lane INTEGER NOT NULL, key TEXT, tags TEXT,
     payload BLOB NOT NULL, size INTEGER NOT NULL, sent_ms INTEGER NOT NULL, expires_ms INTEGER,
     reply_to TEXT, correlation_id TEXT)`,
  `CREATE TABLE IF NOT EXISTS schedule (kind TEXT NOT NULL, ref INTEGER NOT NULL, due_ms INTEGER NOT NULL,
     PRIMARY KEY (kind, ref))`,
  `CREATE INDEX IF NOT EXISTS schedule_by_due ON schedule (due_ms)`,
  `CREATE TABLE IF NOT EXISTS groups (name TEXT PRIMARY KEY, floors TEXT NOT NULL, batch TEXT, delivered TEXT)`,
  ...PUSH_SCHEMA,
];
const TABLES = ["mailbox", ...SEGMENT_TABLES, "messages", "delayed", "schedule", "groups", ...PUSH_TABLES];

/**
 * Tables added after a release created mailboxes without them: created
 * (IF NOT EXISTS) when such a mailbox loads (upgradeSchema).
 */
const ADDED_TABLES: readonly string[] = [...PUSH_SCHEMA, ...SEGMENT_SCHEMA]; // push delivery (issue 17), segments (issue 26)

/** Tags column form: ",a,b," (so a tag is matched whole, `,a,`), or null. */
export function encodeTags(tags: readonly string[]): string | null {
  return tags.length ? `,${tags.join(",")},` : null;
}


/** Inverse of encodeTags. */
export function decodeTags(col: string | null): string[] {
  return col ? col.slice(1, -1).split(",") : [];
}

/** The reply form of a stored message (payload base64, create_time in unix seconds). */
export function toMq9Message(m: StoredMessage): Mq9Message {
  return {
    msg_id: m.msgId,
    payload: bytesToBase64(m.payload),
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

/** The reply form of a segment entry (its payload a view into the segment's body). */
function toStored(e: SegmentEntry): StoredMessage {
  return {
    msgId: e.msgId,
    lane: e.lane,
    key: e.key,
    tags: e.tags,
    payload: e.payload,
    size: e.payload.byteLength,
    createMs: e.createMs,
    replyTo: e.replyTo,
    correlationId: e.correlationId,
    deadLetter: e.deadLetter,
  };
}

/** True when `e` has not expired at `nowMs`. */
function unexpired(e: SegmentEntry, nowMs: number): boolean {
  return e.expiresMs === null || e.expiresMs > nowMs;
}

/** Lane bitmask of every lane (segment-store.ts `lanes`). */
const ALL_LANES = (1 << LANE_COUNT) - 1;

/** Storage access for one mailbox. */
export class MailboxStore {
  /** The visible messages (segments and keys). */
  private readonly segments: SegmentStore;

  constructor(private readonly sql: SqlStorage) {
    this.segments = new SegmentStore(sql);
  }

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
  }

  /**
   * Loads the mailbox row, or null when there is no mailbox. Upgrades an
   * older schema first and moves a legacy per-message table into segments
   * (legacy-messages-store.ts; `transact` runs each of its batches all or
   * nothing: pass storage.transactionSync).
   */
  loadMeta(transact: (fn: () => void) => void = (fn) => fn()): MailboxMeta | null {
    if (!this.hasSchema()) return null;
    this.upgradeSchema();
    migrateLegacyMessages(this.sql, this.segments, transact);
    const r = this.sql.exec(
      "SELECT address, created_ms, ttl_s, expires_ms, MAX(next_msg_id, (SELECT COALESCE(MAX(last_id) + 1, 0) FROM segments)) AS next_id FROM mailbox WHERE id = 1",
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
    const delayed = this.sql.exec<{ b: number | null }>(
      `SELECT sum(size + coalesce(length(CAST(key AS BLOB)), 0) + coalesce(length(CAST(tags AS BLOB)), 0)
         + coalesce(length(reply_to), 0) + coalesce(length(correlation_id), 0)) AS b FROM delayed`,
    ).one().b ?? 0;
    return this.segments.storedBytes() + delayed;
  }

  /** Drops every table: the mailbox and all its data are gone. */
  dropAll(): void {
    for (const t of TABLES) this.sql.exec(`DROP TABLE IF EXISTS ${t}`);
  }

  /**
   * True when appending `ms` (appendVisible for one message,
   * appendVisibleMany for several) is ONE SQL statement — no key to
   * compact, no TTL to schedule, one segment (≤ SEGMENT_MAX_BYTES) — which
   * is atomic by itself: the caller needs no `transactionSync` around it (a
   * savepoint and its release were a visible part of a SEND's CPU).
   */
  appendIsOneStatement(ms: readonly NewMessage[]): boolean {
    let bytes = 0;
    for (const m of ms) {
      if (m.key !== null || m.expiresMs !== null) return false;
      bytes += entryBound({ ...m, createMs: 0, tags: encodeTags(m.tags), deadLetter: m.deadLetter ?? null });
    }
    return ms.length <= 1 || bytes <= SEGMENT_MAX_BYTES;
  }

  /** Appends one visible message with msg_id `msgId` (greater than every stored id); see appendVisibleMany. */
  appendVisible(msgId: number, m: NewMessage, createMs: number): void {
    this.appendVisibleMany(msgId, [m], createMs);
  }

  /**
   * Appends visible messages with msg_ids `firstId`, `firstId + 1`, …
   * (greater than every stored id), created at `createMs` (one time for
   * all, or one per message), as ONE segment row (more past
   * SEGMENT_MAX_BYTES; segment-store.ts): a message with a key replaces the
   * older one with that key (key compaction; the newest of the run wins),
   * and the segment's earliest TTL is scheduled.
   */
  appendVisibleMany(firstId: number, ms: readonly NewMessage[], createMs: number | readonly number[]): void {
    if (ms.length === 0) return;
    this.segments.append(ms.map((m, i) => ({
      msgId: firstId + i,
      lane: m.lane,
      createMs: typeof createMs === "number" ? createMs : createMs[i]!,
      expiresMs: m.expiresMs,
      key: m.key,
      tags: encodeTags(m.tags),
      replyTo: m.replyTo,
      correlationId: m.correlationId,
      deadLetter: m.deadLetter ?? null,
      payload: m.payload,
    })));
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
   * Deletes the messages whose TTL ended at `nowMs` from up to `limit`
   * segments due; returns how many segments. `nextMsgId` is persisted when
   * any was handled.
   */
  expireDue(nowMs: number, limit: number, nextMsgId: number): number {
    const n = this.segments.expireDue(nowMs, limit);
    if (n) this.saveNextId(nextMsgId);
    return n;
  }

  /** Earliest due time in the schedule, push rows left out (the push driver keeps its own, push/store.ts), or null. */
  earliestDue(): number | null {
    if (!this.hasSchema()) return null;
    return (this.sql.exec("SELECT MIN(due_ms) AS t FROM schedule WHERE kind <> ?", ScheduleKind.push).one().t as number | null) ?? null;
  }

  /** The visible, unexpired message `msgId`, or null. */
  message(msgId: number, nowMs: number): StoredMessage | null {
    const e = this.segments.entry(msgId);
    return e && unexpired(e, nowMs) ? toStored(e) : null;
  }

  /**
   * Messages of `lane` with msg_id ≥ `fromId` not expired at `nowMs`, FIFO,
   * at most `limit`; read lazily so the caller can stop at its byte budget.
   */
  *readLane(lane: Lane, fromId: number, limit: number, nowMs: number): Generator<StoredMessage> {
    if (limit <= 0) return;
    let n = 0;
    for (const e of this.segments.ascending(fromId, 1 << lane)) {
      if (!unexpired(e, nowMs)) continue;
      yield toStored(e);
      if (++n >= limit) return;
    }
  }

  /** Highest stored msg_id per lane (index = lane), -1 for an empty lane. */
  laneTops(): number[] {
    const tops = Array.from({ length: LANE_COUNT }, () => -1);
    if (!this.hasSchema()) return tops;
    return tops.map((_, lane) => this.segments.laneTop(lane as Lane));
  }

  /** First msg_id whose create time is ≥ `ms`, or null. */
  firstIdCreatedAtOrAfter(ms: number): number | null {
    for (const e of this.segments.ascending(0, ALL_LANES, ms)) if (e.createMs >= ms) return e.msgId;
    return null;
  }

  /** Lane of a stored message, or null. */
  laneOf(msgId: number): Lane | null {
    return this.segments.entry(msgId)?.lane ?? null;
  }

  /** Deletes one visible message; false when there is none with that id. Persists `nextMsgId` when it did. */
  deleteMessage(msgId: number, nextMsgId: number): boolean {
    const gone = this.segments.remove([msgId]).length > 0;
    if (gone) this.saveNextId(nextMsgId);
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
    const sinceMs = spec.sinceSec !== null ? spec.sinceSec * 1000 : null;
    const tags = spec.tags.map((t) => `,${t},`);
    const matches = (e: SegmentEntry) => unexpired(e, nowMs)
      && (sinceMs === null || e.createMs >= sinceMs)
      && tags.every((t) => e.tags !== null && e.tags.includes(t))
      && (spec.correlationId === null || e.correlationId === spec.correlationId);
    if (spec.limit <= 0) return;
    if (spec.key !== null) {
      const e = this.segments.keyed(spec.key); // a key is held by one message at most
      if (e && matches(e)) yield toStored(e);
      return;
    }
    let n = 0;
    for (const e of this.segments.descending(sinceMs ?? 0)) {
      if (!matches(e)) continue;
      yield toStored(e);
      if (++n >= spec.limit) return;
    }
  }

  /** A group's cursor, or null when the group never fetched. */
  loadGroup(name: string): GroupCursor | null {
    const r = this.sql.exec("SELECT floors, batch, delivered FROM groups WHERE name = ?", name).toArray()[0];
    return r ? decodeCursor(r.floors as string, r.batch as string | null, r.delivered as string | null) : null;
  }

  /** Unexpired visible messages and their payload bytes per lane (index = lane); a scan of the segments' counts. */
  laneCounts(nowMs: number): { messages: number; bytes: number }[] {
    return this.segments.laneCounts(nowMs, LANE_COUNT);
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
