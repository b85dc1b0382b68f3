/**
 * `mq9-*` SEND headers (mq9 spec, SEND Header; DESIGN.md §5). Names match
 * case-insensitively on every transport; values are trimmed.
 *
 * - `mq9-key`: compaction key (1–512 chars).
 * - `mq9-delay`: seconds before the message becomes visible (integer ≥ 0).
 * - `mq9-ttl`: message lifetime in seconds counted from send time
 *   (integer ≥ 0; 0 = no message TTL). A ttl ≤ delay could never be seen and
 *   is rejected.
 * - `mq9-tags`: comma-separated tags (empty items dropped, duplicates removed).
 * - `mq9-priority`: normal (default) / urgent / critical.
 * - `mq9-reply-to`, `mq9-correlation-id`: the conversation extension
 *   (conversation.ts).
 * Any other `mq9-*` name is rejected so that a typo is not silently ignored;
 * headers without the `mq9-` prefix are ignored.
 *
 * Key and tags are UTF-8 text. Bytes that are not UTF-8 reach the broker as
 * U+FFFD on both transports (workerd decodes HTTP header bytes that way, the
 * NATS header block is decoded the same way), so a value containing U+FFFD
 * is refused: two different raw keys must never become one key.
 */
import { Mq9Error, echo } from "./errors";
import { MAX_DURATION_S, MAX_KEY_CHARS, MAX_TAG_CHARS, MAX_TAGS } from "./limits";
import { DEFAULT_PRIORITY, parsePriority, type Priority } from "./priority";
import { parseCorrelationId, parseReplyTo } from "./conversation";

/** SEND options carried by the headers. */
export interface Mq9SendOptions {
  /** Compaction key, or null. */
  key: string | null;
  /** Delay before visibility, seconds (0 = immediately visible). */
  delaySec: number;
  /** Message TTL from send time, seconds (0 = none). */
  ttlSec: number;
  /** Tags in first-seen order, unique. */
  tags: string[];
  priority: Priority;
  /** `mq9-reply-to`: where answers go (a mail_address), or null. */
  replyTo: string | null;
  /** `mq9-correlation-id`: the exchange the message belongs to (≤ 128 printable ASCII bytes), or null. */
  correlationId: string | null;
}

/** The recognized header names (lower case). */
export const MQ9_HEADER_NAMES = ["mq9-key", "mq9-delay", "mq9-ttl", "mq9-tags", "mq9-priority", "mq9-reply-to", "mq9-correlation-id"] as const;

/**
 * The options of a SEND without mq9 headers: one shared, frozen object
 * (never modify a parsed result). A batch of such SENDs then carries it
 * once: structured clone writes an object met again as a back-reference.
 */
export const NO_SEND_OPTIONS: Mq9SendOptions = Object.freeze({
  key: null, delaySec: 0, ttlSec: 0, tags: Object.freeze([]) as unknown as string[], priority: DEFAULT_PRIORITY, replyTo: null, correlationId: null,
});

/**
 * Parses the `mq9-*` headers out of `headers` (any iterable of
 * `[name, value]`, e.g. a Map or a fetch `Headers`). Throws
 * Mq9Error(bad_request) for an unknown `mq9-*` name, a name given twice,
 * non-numeric/negative/too-large delay or ttl, ttl ≤ delay, an empty key,
 * a key or tags that are not UTF-8 text (contain U+FFFD), too many/too long
 * tags, or an unknown priority.
 */
export function parseMq9Headers(headers: Iterable<readonly [string, string]>): Mq9SendOptions {
  const seen = new Map<string, string>();
  for (const [rawName, value] of headers) {
    const name = rawName.toLowerCase();
    if (!name.startsWith("mq9-")) continue;
    if (!(MQ9_HEADER_NAMES as readonly string[]).includes(name)) {
      throw new Mq9Error("bad_request", `unknown header ${echo(name)} (known: ${MQ9_HEADER_NAMES.join(", ")})`);
    }
    if (seen.has(name)) throw new Mq9Error("bad_request", `header ${echo(name)} given more than once`);
    seen.set(name, value.trim());
  }
  if (seen.size === 0) return NO_SEND_OPTIONS;
  const out: Mq9SendOptions = { key: null, delaySec: 0, ttlSec: 0, tags: [], priority: DEFAULT_PRIORITY, replyTo: null, correlationId: null };
  const key = seen.get("mq9-key");
  if (key !== undefined) {
    assertText("mq9-key", key);
    if (key === "") throw new Mq9Error("bad_request", "mq9-key must not be empty");
    if (key.length > MAX_KEY_CHARS) throw new Mq9Error("bad_request", `mq9-key longer than ${MAX_KEY_CHARS} characters`);
    out.key = key;
  }
  const delay = seen.get("mq9-delay");
  if (delay !== undefined) out.delaySec = parseSeconds("mq9-delay", delay);
  const ttl = seen.get("mq9-ttl");
  if (ttl !== undefined) out.ttlSec = parseSeconds("mq9-ttl", ttl);
  if (out.ttlSec > 0 && out.ttlSec <= out.delaySec) {
    throw new Mq9Error(
      "bad_request",
      `mq9-ttl (${out.ttlSec}s) must be greater than mq9-delay (${out.delaySec}s): the message would expire before it becomes visible`,
    );
  }
  const tags = seen.get("mq9-tags");
  if (tags !== undefined) {
    assertText("mq9-tags", tags);
    out.tags = parseTags(tags);
  }
  const priority = seen.get("mq9-priority");
  if (priority !== undefined) out.priority = parsePriority(priority);
  const replyTo = seen.get("mq9-reply-to");
  if (replyTo !== undefined) out.replyTo = parseReplyTo(replyTo);
  const correlationId = seen.get("mq9-correlation-id");
  if (correlationId !== undefined) out.correlationId = parseCorrelationId(correlationId);
  return out;
}

/** U+FFFD: what bytes that are not UTF-8 decode to. */
const REPLACEMENT_CHAR = "\uFFFD";

/** Throws Mq9Error(bad_request) when header `name`'s value holds U+FFFD (its bytes were not UTF-8). */
function assertText(name: string, value: string): void {
  if (value.includes(REPLACEMENT_CHAR)) {
    throw new Mq9Error("bad_request", `${name} must be UTF-8 text: it contains bytes that are not UTF-8 (or U+FFFD)`);
  }
}

/** Parses a whole number of seconds (decimal digits only, ≤ MAX_DURATION_S). */
export function parseSeconds(name: string, value: string): number {
  if (!/^[0-9]+$/.test(value)) {
    throw new Mq9Error("bad_request", `${name} must be a whole number of seconds ≥ 0, got "${echo(value)}"`);
  }
  const n = Number(value);
  if (n > MAX_DURATION_S) throw new Mq9Error("bad_request", `${name} ${echo(value)} exceeds the maximum of ${MAX_DURATION_S} seconds`);
  return n;
}

/** Splits a comma list of tags: trimmed, empty items dropped, duplicates removed. */
export function parseTags(value: string): string[] {
  const tags: string[] = [];
  for (const raw of value.split(",")) {
    const t = raw.trim();
    if (t === "" || tags.includes(t)) continue;
    if (t.length > MAX_TAG_CHARS) throw new Mq9Error("bad_request", `tag "${t.slice(0, 20)}…" longer than ${MAX_TAG_CHARS} characters`);
    tags.push(t);
  }
  if (tags.length > MAX_TAGS) throw new Mq9Error("bad_request", `more than ${MAX_TAGS} tags`);
  return tags;
}

const utf8 = new TextEncoder();

/**
 * Bytes a SEND stores besides its payload: the UTF-8 key and tags as the
 * mailbox stores them (tags column `,a,b,`), and the reply-to address and
 * correlation id, up to ~4.9 kB of ASCII. The
 * storage quota (stored bytes) and the byte-rate quota count them with the
 * payload (docs/tenants.md "Quotas"); metering's `bytes_in` does not.
 */
export function sendMetadataBytes(o: Mq9SendOptions): number {
  const key = o.key === null ? 0 : utf8.encode(o.key).length;
  // reply-to and correlation id are ASCII (validated): their length is their byte count
  const conversation = (o.replyTo?.length ?? 0) + (o.correlationId?.length ?? 0);
  return key + (o.tags.length ? utf8.encode(o.tags.join(",")).length + 2 : 0) + conversation;
}
