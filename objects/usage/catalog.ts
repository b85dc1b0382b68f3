/**
 * The metric catalog (pure): every metric the broker exports on `/metrics`,
 * its Prometheus type, labels and help text, and which usage field of the
 * hourly metering (issue 9) it feeds. Reporters (Partition, Mailbox,
 * sessions, the Worker) count **series** — a metric name plus its labels,
 * encoded as the Prometheus text key `name{a="x",b="y"}` — and the
 * aggregator (UsageAggregator) sums them per tenant. docs/operations.md
 * lists the same table for operators; `test/unit/usage-catalog.test.ts`
 * checks the two agree.
 */
import { OP_NAMES, REQUEST_OPS } from "../../wire/mortar/constants";

/** Metering fields of one tenant-hour (docs/operations.md "Usage metering"). */
export type UsageField =
  | "requests"
  | "messages_in"
  | "messages_out"
  | "bytes_in"
  | "bytes_out"
  | "connection_seconds"
  | "storage_bytes"
  | "rows_written"
  | "rows_read"
  | "do_requests"
  | "worker_requests";

/** The summed fields (storage_bytes is a high-water mark, tracked apart). */
export const SUMMED_USAGE_FIELDS = [
  "requests", "messages_in", "messages_out", "bytes_in", "bytes_out", "connection_seconds",
  "rows_written", "rows_read", "do_requests", "worker_requests",
] as const satisfies readonly UsageField[];

/** One metric family. */
export interface MetricDef {
  name: string;
  /** counter: only grows (reporters send increments); gauge: reporters send level changes. */
  type: "counter" | "gauge";
  /** Label names, in the order they appear in series keys (the `tenant` label is added on output). */
  labels: readonly string[];
  help: string;
  /** The usage field this metric adds to, if any; a function decides per series (label values). */
  usage?: UsageField | ((labels: Readonly<Record<string, string>>) => UsageField | null);
  /** Who counts it (for docs/operations.md). */
  source: string;
  /**
   * Label sets known in advance: every known tenant shows these series from
   * the start, at 0, so that "nothing yet" reads 0 and not "no data"
   * (default: the one series of a metric without labels; none when the label
   * values come with traffic, e.g. op or error code).
   */
  initial?: readonly Readonly<Record<string, string>>[];
  /** "broker": one sample for the whole broker, no tenant label, not reported by objects (default: per tenant). */
  scope?: "broker";
}

const requestOpNames = new Set([...REQUEST_OPS].map((op) => opLabel(op)));

/** `initial` label sets: one per value of one label. */
const each = (label: string, ...values: string[]) => values.map((v) => ({ [label]: v }));
const WS_PROTOCOLS = each("protocol", "mortar", "nats");
const ALL_PROTOCOLS = each("protocol", "mortar", "nats", "http");

/** Every exported metric, in output order. */
export const METRICS: readonly MetricDef[] = [
  // The broker itself (the Worker, when it answers /metrics)
  { name: "mortarmq_build_info", type: "gauge", labels: ["version"], source: "Worker", scope: "broker",
    help: "Always 1; the version label is the broker's version (package.json)." },
  // MortarMQ connections (MortarSession)
  { name: "mortarmq_frames_received_total", type: "counter", labels: ["op"], source: "MortarSession",
    help: "MortarMQ frames decoded from clients, by op (lower-case op name).",
    usage: (l) => (requestOpNames.has(l.op ?? "") ? "requests" : null) },
  { name: "mortarmq_frames_sent_total", type: "counter", labels: ["op"], source: "MortarSession",
    help: "MortarMQ frames written to clients, by op (ok, err, msg, notice)." },
  { name: "mortarmq_errors_total", type: "counter", labels: ["code", "name"], source: "MortarSession",
    help: "ERR frames sent to MortarMQ clients, by error code (0x…) and registry name." },
  // Transports
  { name: "mortarmq_bytes_received_total", type: "counter", labels: ["protocol"], source: "MortarSession, NatsSession, Worker",
    help: "Bytes received from clients: WebSocket message bytes (mortar, nats), mq9 HTTP request bodies (http).", initial: ALL_PROTOCOLS },
  { name: "mortarmq_bytes_sent_total", type: "counter", labels: ["protocol"], source: "MortarSession, NatsSession, Worker",
    help: "Bytes sent to clients: WebSocket message bytes (mortar, nats), mq9 HTTP reply bodies (http).", initial: ALL_PROTOCOLS },
  { name: "mortarmq_connections_opened_total", type: "counter", labels: ["protocol"], source: "MortarSession, NatsSession",
    help: "Authenticated WebSocket connections opened (mortar, nats).", initial: WS_PROTOCOLS },
  { name: "mortarmq_open_connections", type: "gauge", labels: ["protocol"], source: "MortarSession, NatsSession",
    help: "Authenticated WebSocket connections open now (mortar, nats).", initial: WS_PROTOCOLS },
  { name: "mortarmq_connection_seconds_total", type: "counter", labels: ["protocol"], source: "MortarSession, NatsSession",
    help: "Seconds authenticated WebSocket connections were open (mortar, nats).", usage: "connection_seconds", initial: WS_PROTOCOLS },
  // MortarMQ write and read path (Partition)
  { name: "mortarmq_messages_published_total", type: "counter", labels: [], source: "Partition",
    help: "MortarMQ records appended by PUB (duplicates and dead-letter copies excluded).", usage: "messages_in" },
  { name: "mortarmq_published_bytes_total", type: "counter", labels: [], source: "Partition",
    help: "Value bytes of the records counted by mortarmq_messages_published_total.", usage: "bytes_in" },
  { name: "mortarmq_non_idempotent_publishes_total", type: "counter", labels: [], source: "Partition",
    help: "PUBs appended with producer_id 0 and producer_seq 0 (no deduplication)." },
  { name: "mortarmq_publishes_deduplicated_total", type: "counter", labels: [], source: "Partition",
    help: "PUBs answered as duplicates of a stored record (result_flags bit0), nothing appended." },
  { name: "mortarmq_messages_delivered_total", type: "counter", labels: [], source: "Partition",
    help: "MortarMQ deliveries (MSG, push or PULL), redeliveries included.", usage: "messages_out" },
  { name: "mortarmq_delivered_bytes_total", type: "counter", labels: [], source: "Partition",
    help: "Value bytes of the deliveries counted by mortarmq_messages_delivered_total.", usage: "bytes_out" },
  { name: "mortarmq_messages_acked_total", type: "counter", labels: [], source: "Partition",
    help: "Deliveries settled by ACK." },
  { name: "mortarmq_messages_redelivered_total", type: "counter", labels: [], source: "Partition",
    help: "Redeliveries (after NACK RETRY or an expired work deadline)." },
  { name: "mortarmq_messages_dead_lettered_total", type: "counter", labels: [], source: "Partition",
    help: "Messages moved to the .dlq twin (NACK REJECT or the last attempt failed)." },
  { name: "mortarmq_messages_retention_deleted_total", type: "counter", labels: [], source: "Partition",
    help: "MortarMQ records deleted by topic retention (retention_ms, retention_bytes, retention_messages), in whole segments." },
  { name: "mortarmq_messages_retention_skipped_total", type: "counter", labels: ["topic", "group"], source: "Partition",
    help: "Records retention deleted before the consumer group settled them (never delivered, or delivered and not yet settled); the group continued at the first retained sequence." },
  // mq9
  { name: "mortarmq_mq9_requests_total", type: "counter", labels: ["verb", "outcome", "transport"], source: "NatsSession, Worker",
    help: "mq9 requests by subject verb (e.g. msg_send), outcome (ok or the error kind) and transport (http, nats, mcp).",
    usage: "requests" },
  { name: "mortarmq_permission_denied_total", type: "counter", labels: ["operation"], source: "MortarSession, NatsSession, Worker",
    help: "Requests refused by the token's scopes (docs/tenants.md \"Permissions\"), by operation (mq9.send, mortar.publish, …); each refusal is also logged with the token id." },
  { name: "mortarmq_mq9_messages_sent_total", type: "counter", labels: [], source: "Mailbox",
    help: "mq9 messages stored by MSG.SEND (delayed ones included).", usage: "messages_in" },
  { name: "mortarmq_mq9_sent_bytes_total", type: "counter", labels: [], source: "Mailbox",
    help: "Payload bytes of the messages counted by mortarmq_mq9_messages_sent_total.", usage: "bytes_in" },
  { name: "mortarmq_mq9_messages_returned_total", type: "counter", labels: ["verb"], source: "Mailbox",
    help: "mq9 messages returned to clients by MSG.FETCH and MSG.QUERY (verb fetch, query) and sent by push delivery attempts (verb push, retries included).",
    usage: "messages_out", initial: each("verb", "fetch", "query", "push") },
  { name: "mortarmq_mq9_returned_bytes_total", type: "counter", labels: ["verb"], source: "Mailbox",
    help: "Payload bytes of the messages counted by mortarmq_mq9_messages_returned_total.", usage: "bytes_out", initial: each("verb", "fetch", "query", "push") },
  { name: "mortarmq_mq9_mailboxes", type: "gauge", labels: [], source: "Mailbox",
    help: "mq9 mailboxes that exist now." },
  { name: "mortarmq_long_polls_waiting", type: "gauge", labels: ["kind"], source: "Mailbox, MortarSession",
    help: "Long-polls held now: mq9 FETCH with max_wait_ms (mq9_fetch), MortarMQ PULL waiting for records (mortar_pull).", initial: each("kind", "mq9_fetch", "mortar_pull") },
  { name: "mortarmq_stored_bytes", type: "gauge", labels: ["system"], source: "Partition, Mailbox",
    help: "Bytes of stored messages: MortarMQ keys + values (mortar), mq9 payloads + keys + tags incl. delayed (mq9).",
    usage: "storage_bytes", initial: each("system", "mortar", "mq9") },
  // mq9 push delivery (Mailbox; docs/push.md)
  { name: "mortarmq_push_attempts_total", type: "counter", labels: ["outcome"], source: "Mailbox",
    help: "Push delivery attempts by outcome: ok (2xx, the message is acknowledged), http_error (any other status), timeout, connection_error.",
    initial: each("outcome", "ok", "http_error", "timeout", "connection_error") },
  { name: "mortarmq_push_dead_lettered_total", type: "counter", labels: [], source: "Mailbox",
    help: "Pushed messages copied to the <mail_address>.dlq mailbox after max_attempts failed attempts." },
  { name: "mortarmq_push_subscriptions", type: "gauge", labels: [], source: "Mailbox",
    help: "Push subscriptions that exist now." },
  { name: "mortarmq_push_in_flight", type: "gauge", labels: [], source: "Mailbox",
    help: "Push attempts waiting for the endpoint's answer now." },
  { name: "mortarmq_push_backlog", type: "gauge", labels: [], source: "Mailbox",
    help: "Messages push subscriptions have not had acknowledged yet (in flight and waiting for a retry included), summed over subscriptions." },
  // What the tenant's objects cost on Cloudflare's bill (objects/usage/cost.ts; docs/tenants.md "What a tenant costs")
  { name: "mortarmq_tenant_rows_written_total", type: "counter", labels: [], source: "Partition, Mailbox, MailboxIndex, MortarSession, NatsSession, UsageAggregator, ConsumerGroup, TopicRegistry, AgentRegistry, TenantDirectory",
    help: "SQLite rows written by the tenant's Durable Objects (the cursors' rowsWritten; an alarm set counts as one), billed per row.", usage: "rows_written" },
  { name: "mortarmq_tenant_rows_read_total", type: "counter", labels: [], source: "Partition, Mailbox, MailboxIndex, MortarSession, NatsSession, UsageAggregator, ConsumerGroup, TopicRegistry, AgentRegistry, TenantDirectory",
    help: "SQLite rows read by the tenant's Durable Objects (the cursors' rowsRead), billed per row.", usage: "rows_read" },
  { name: "mortarmq_tenant_do_requests_total", type: "counter", labels: ["kind"], source: "Partition, Mailbox, MailboxIndex, MortarSession, NatsSession, UsageAggregator, ConsumerGroup, TopicRegistry, AgentRegistry, TenantDirectory",
    help: "Durable Object requests the tenant's objects received, as billed, by kind: rpc, fetch, alarm, websocket (incoming WebSocket messages, 20 per request).",
    usage: "do_requests", initial: each("kind", "rpc", "fetch", "alarm", "websocket") },
  { name: "mortarmq_tenant_worker_requests_total", type: "counter", labels: [], source: "Worker, MortarSession, NatsSession",
    help: "HTTP requests the Worker served for the tenant, billed per request: mq9 over HTTP, MCP, A2A push, the console's APIs, and each WebSocket upgrade (counted by the session once the connection authenticated).",
    usage: "worker_requests" },
  // The pipeline itself (UsageAggregator)
  { name: "mortarmq_telemetry_reports_total", type: "counter", labels: ["result"], source: "UsageAggregator",
    help: "Counter reports received by the tenant's aggregator: applied, or duplicate (a retry already applied, ignored).", initial: each("result", "applied", "duplicate") },
];

const BY_NAME = new Map(METRICS.map((m) => [m.name, m]));

/** The definition of metric `name`, or undefined. */
export function metricDef(name: string): MetricDef | undefined {
  return BY_NAME.get(name);
}

/** Lower-case op name used as the `op` label (`pub`, `control_ack`, …; unknown bytes as `0x..`). */
export function opLabel(op: number): string {
  const n = OP_NAMES[op];
  return n ? n.toLowerCase() : `0x${op.toString(16).padStart(2, "0")}`;
}

/** Escapes a label value for the Prometheus text format. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

/**
 * The series key of `name` with `labels` (values in the metric's label
 * order; a label missing from `labels` is written as ""). Throws for an
 * unknown metric — a typo must fail a test, not vanish.
 */
export function series(name: string, labels: Readonly<Record<string, string>> = {}): string {
  const def = BY_NAME.get(name);
  if (!def) throw new Error(`unknown metric ${name}`);
  if (def.labels.length === 0) return name;
  return `${name}{${def.labels.map((l) => `${l}="${escapeLabelValue(labels[l] ?? "")}"`).join(",")}}`;
}

/** The series keys every known tenant shows from the start, at 0 (MetricDef.initial; none for broker-scope metrics). */
export function initialSeries(def: MetricDef): string[] {
  if (def.scope === "broker") return [];
  const sets = def.initial ?? (def.labels.length === 0 ? [{}] : []);
  return sets.map((labels) => series(def.name, labels));
}

/** A parsed series key. */
export interface ParsedSeries {
  name: string;
  labels: Record<string, string>;
  /** The `a="x",b="y"` part (escaped as in the key), "" without labels. */
  labelText: string;
}

const parsedCache = new Map<string, ParsedSeries | null>();

/** Parses a series key built by {@link series}; null when malformed. Results are cached. */
export function parseSeries(key: string): ParsedSeries | null {
  let p = parsedCache.get(key);
  if (p !== undefined) return p;
  p = parseUncached(key);
  if (parsedCache.size < 10_000) parsedCache.set(key, p);
  return p;
}

function parseUncached(key: string): ParsedSeries | null {
  const brace = key.indexOf("{");
  if (brace < 0) return /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(key) ? { name: key, labels: {}, labelText: "" } : null;
  if (!key.endsWith("}")) return null;
  const name = key.slice(0, brace);
  const labelText = key.slice(brace + 1, -1);
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  while (end < labelText.length && (m = re.exec(labelText)) !== null) {
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    end = re.lastIndex;
  }
  return end === labelText.length ? { name, labels, labelText } : null;
}

/** The usage field a series adds to (null = none, or not a known metric). */
export function usageFieldOf(key: string): UsageField | null {
  const p = parseSeries(key);
  const def = p && BY_NAME.get(p.name);
  if (!p || !def || !def.usage) return null;
  return typeof def.usage === "function" ? def.usage(p.labels) : def.usage;
}
