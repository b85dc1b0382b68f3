/**
 * The typed mq9 client (issue 16; mq9 spec, docs/mq9.md, docs/agents.md):
 * one API over three transports with the same semantics and results —
 * `http` (fetch: browsers, Workers, Node), `nats-ws` (nats.ws: browsers,
 * Node) and `nats` (TCP through the NATS bridge: Node).
 *
 * Every method is one mq9 request (except consume() and request(), which
 * loop); a reply with a non-empty `error` throws a {@link Mq9ClientError}
 * carrying that text and its kind. The client never resends a request by
 * itself (a SEND that may have been stored is not repeated); consume() and
 * request() retry only their FETCHes.
 */
import { a2aUpdatesOf, type A2aPushConfig, type A2aUpdate, type A2aUpdatesOptions } from "./a2a";
import { mailAddressProblem } from "../../wire/mq9/address"; // not the index: that loads zod
import { echo } from "../../wire/mq9/errors";
import type { PushInfo } from "../../wire/mq9/push-types";
import { Mq9Agents } from "./agents";
import { Mq9Consumer, CONSUME_MAX_WAIT_MS, type ConsumeOptions } from "./consume";
import { Mq9ClientError } from "./errors";
import { HttpTransport } from "./http";
import { Mq9Message, type MessageOwner, type Mq9WireMessage, type SendOptions } from "./message";
import { encodePayload, type Mq9Payload } from "./payload";
import { ReplyRouter } from "./replies";
import type { Mq9Transport, Mq9TransportName, TransportOptions } from "./transport";
import { resolveEndpoint } from "./url";

/** Options of {@link Mq9Client.connect}. */
export interface Mq9ConnectOptions extends TransportOptions {
  /** Default: from the URL's scheme (http(s) → `http`, ws(s) → `nats-ws`, nats/tcp → `nats`). */
  transport?: Mq9TransportName;
  /** Time allowed for one answer, ms (default 30 000); a long-poll FETCH adds its `maxWaitMs`. */
  timeoutMs?: number;
}

/** FETCH options (docs/mq9.md "FETCH"). */
export interface FetchOptions {
  /** Consumer group: stateful (the broker keeps its position). Without it the FETCH is stateless. */
  group?: string;
  /** Start: latest (default), earliest, from_time, from_id; implied by `fromTime` / `fromId`. */
  deliver?: "latest" | "earliest" | "from_time" | "from_id";
  /** Unix seconds (or a Date): the first message created at or after it. */
  fromTime?: number | Date;
  /** The first msg_id (inclusive). */
  fromId?: number;
  /** Reset the group's position to `deliver`. */
  forceDeliver?: boolean;
  /** At most this many messages (broker default 100, max 1000). */
  numMsgs?: number;
  /** Long-poll: wait up to this long for a message, ms (broker default 500, 0 = answer at once, max 30 000). */
  maxWaitMs?: number;
  signal?: AbortSignal;
}

/** QUERY options (docs/mq9.md "QUERY"); filters combine with AND. */
export interface QueryOptions {
  key?: string;
  /** The newest N matches (broker default and max 1000). */
  limit?: number;
  /** Created at or after: unix seconds or a Date. */
  since?: number | Date;
  /** Messages carrying every one of these tags. */
  tags?: readonly string[];
  /** Messages sent with this `mq9-correlation-id` (conversation extension). */
  correlationId?: string;
  signal?: AbortSignal;
}

/** request() options: the SEND options (but reply-to and correlation id, which request() sets) and how long to wait. */
export interface RequestOptions extends Omit<SendOptions, "replyTo" | "correlationId"> {
  /** How long to wait for the answer, ms (default 30 000). */
  timeoutMs?: number;
}

/** createPush() options (docs/push.md "PUSH.CREATE"); the broker's defaults where absent. */
export interface PushOptions {
  /** The consumer group the endpoint consumes as (required). */
  group: string;
  /** The endpoint: https:// (http:// to loopback only on a local broker). */
  url: string;
  /** Signing secret, 32–256 bytes; absent: the broker generates one and returns it once. */
  secret?: string;
  /** Attempts per message before it is dead-lettered (default 8, 1–100). */
  maxAttempts?: number;
  /** Where a new group starts: latest (default), earliest, from_time, from_id. */
  deliver?: "latest" | "earliest" | "from_time" | "from_id";
  fromTime?: number | Date;
  fromId?: number;
  /** Messages in flight (default 1: strictly ordered; up to 32). */
  concurrency?: number;
  /** An attempt without an answer this long fails, ms (default 10 000). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** call() options. */
export interface CallOptions {
  /** Request headers (`mq9-*`), sent as given. */
  headers?: Record<string, string | undefined>;
  /** Time allowed for the answer, ms (default: the client's). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A JSON reply of the broker: `error` is "" (a reply with an error throws instead). */
export type Mq9Reply = { error: string } & Record<string, unknown>;

/** Default time for one answer, ms. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** The broker's FETCH long-poll cap, ms (docs/mq9.md). */
const MAX_WAIT_CAP_MS = 30_000;

/** The broker's default FETCH long-poll, ms. */
const DEFAULT_MAX_WAIT_MS = 500;

/** The subjects (mq9 spec, 协议总览). */
export const mq9Subjects = {
  create: () => "$mq9.AI.MAILBOX.CREATE",
  send: (address: string) => `$mq9.AI.MSG.SEND.${address}`,
  fetch: (address: string) => `$mq9.AI.MSG.FETCH.${address}`,
  ack: (address: string) => `$mq9.AI.MSG.ACK.${address}`,
  query: (address: string) => `$mq9.AI.MSG.QUERY.${address}`,
  delete: (address: string, msgId: number) => `$mq9.AI.MSG.DELETE.${address}.${msgId}`,
  agent: (verb: "REGISTER" | "UNREGISTER" | "REPORT" | "DISCOVER") => `$mq9.AI.AGENT.${verb}`,
  push: (verb: "CREATE" | "LIST" | "DELETE", address: string) => `$mq9.AI.PUSH.${verb}.${address}`,
  a2aReceiver: (verb: "CREATE" | "DELETE", address: string) => `$mq9.AI.A2A.RECEIVER.${verb}.${address}`,
} as const;

/** `address`, checked with the broker's own rules (a bad address must never reach a NATS subject). */
function checked(address: string): string {
  const problem = mailAddressProblem(address);
  if (problem) throw Mq9ClientError.client(`invalid mail_address "${echo(address)}": ${problem}`); // the broker's text (wire/mq9/address.ts)
  return address;
}

function unixSeconds(t: number | Date): number {
  return t instanceof Date ? Math.floor(t.getTime() / 1000) : t;
}

/**
 * The `mq9-*` headers of SEND options (undefined ones left out).
 * @throws Mq9ClientError (`invalid_request`, source `client`) for a tag containing a comma, which the
 *   comma list `mq9-tags` cannot carry (the broker would split it; it also trims tags and drops empty ones)
 */
export function sendHeaders(o: SendOptions): Record<string, string> {
  const h: Record<string, string> = {};
  if (o.key !== undefined) h["mq9-key"] = o.key;
  if (o.delay !== undefined) h["mq9-delay"] = String(o.delay);
  if (o.ttl !== undefined) h["mq9-ttl"] = String(o.ttl);
  if (o.tags !== undefined && o.tags.length > 0) {
    const comma = o.tags.find((t) => t.includes(","));
    if (comma !== undefined) throw Mq9ClientError.client(`tag "${echo(comma)}" contains a comma: mq9-tags is a comma list, so it would arrive as two tags`);
    h["mq9-tags"] = o.tags.join(",");
  }
  if (o.priority !== undefined) h["mq9-priority"] = o.priority;
  if (o.replyTo !== undefined) h["mq9-reply-to"] = o.replyTo;
  if (o.correlationId !== undefined) h["mq9-correlation-id"] = o.correlationId;
  return h;
}

/** The FETCH body of `o` (mq9 spec, FETCH 请求字段): `fromTime` / `fromId` imply their `deliver`. */
export function fetchBody(o: FetchOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.group !== undefined) body.group_name = o.group;
  const deliver = o.deliver ?? (o.fromId !== undefined ? "from_id" : o.fromTime !== undefined ? "from_time" : undefined);
  if (deliver !== undefined) body.deliver = deliver;
  if (o.fromTime !== undefined) body.from_time = unixSeconds(o.fromTime);
  if (o.fromId !== undefined) body.from_id = o.fromId;
  if (o.forceDeliver) body.force_deliver = true;
  const config: Record<string, number> = {};
  if (o.numMsgs !== undefined) config.num_msgs = o.numMsgs;
  if (o.maxWaitMs !== undefined) config.max_wait_ms = o.maxWaitMs;
  if (Object.keys(config).length > 0) body.config = config;
  return body;
}

/** The QUERY body of `o`. */
export function queryBody(o: QueryOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.key !== undefined) body.key = o.key;
  if (o.limit !== undefined) body.limit = o.limit;
  if (o.since !== undefined) body.since = unixSeconds(o.since);
  if (o.tags !== undefined) body.tags = [...o.tags];
  if (o.correlationId !== undefined) body.correlation_id = o.correlationId;
  return body;
}

/** An mq9 client connected to one broker over one transport. */
export class Mq9Client implements MessageOwner {
  /** The agent registry: register, unregister, report, discover. */
  readonly agents: Mq9Agents;
  private readonly replies: ReplyRouter;
  /** Aborted by close(): ends consumers cleanly. */
  private readonly lifetime = new AbortController();

  private constructor(
    private readonly conn: Mq9Transport,
    private readonly timeoutMs: number,
  ) {
    this.agents = new Mq9Agents((verb, body, signal) => this.call(mq9Subjects.agent(verb), body, { signal }));
    this.replies = new ReplyRouter(this);
  }

  /**
   * Connects to the broker at `url` (see url.ts for the forms). `http`
   * needs no connection: the first request is the first contact.
   * @throws Mq9ClientError invalid_request (bad URL), unauthorized (NATS token refused), unavailable (NATS broker unreachable)
   */
  static async connect(url: string, o: Mq9ConnectOptions = {}): Promise<Mq9Client> {
    const ep = resolveEndpoint(url, o.transport);
    let conn: Mq9Transport;
    if (ep.transport === "http") conn = new HttpTransport(ep.target, o);
    else if (ep.transport === "nats-ws") conn = await (await import("./nats-ws")).openNatsWs(ep.target, o);
    else conn = await (await import("./nats-tcp")).openNatsTcp(ep.target, o);
    return new Mq9Client(conn, o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  }

  /** The transport in use. */
  get transport(): Mq9TransportName {
    return this.conn.name;
  }

  /**
   * Sends any mq9 subject (low level, like `nats request`): `payload` as
   * its bytes (a non-byte value as JSON), `headers` as given.
   * @returns the JSON reply (its `error` is "")
   * @throws Mq9ClientError for a reply with a non-empty `error`, an answer that is not an mq9 reply, or no answer
   */
  async call(subject: string, payload: Mq9Payload = new Uint8Array(0), o: CallOptions = {}): Promise<Mq9Reply> {
    if (this.lifetime.signal.aborted) throw Mq9ClientError.client("the client is closed");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) {
      if (v === undefined) continue;
      if (/[\r\n\0]/.test(v)) throw Mq9ClientError.client(`${k} must not contain a line break (CR or LF): header values are one line`);
      headers[k] = v;
    }
    const answer = await this.conn.request({ subject, headers, payload: encodePayload(payload), timeoutMs: o.timeoutMs ?? this.timeoutMs, signal: o.signal });
    let reply: unknown;
    try {
      reply = JSON.parse(answer.text);
    } catch {
      reply = undefined;
    }
    if (typeof reply !== "object" || reply === null || typeof (reply as { error?: unknown }).error !== "string") {
      const status = answer.status;
      const what = status === null ? "not an mq9 reply" : `HTTP ${status}`;
      const retryable = status === null || status >= 500;
      throw new Mq9ClientError(`${what}: ${answer.text.slice(0, 200)}`, {
        kind: status === 401 ? "unauthorized" : retryable ? "unavailable" : "invalid_request",
        retryable, source: "broker", status, retryAfterMs: answer.retryAfterMs, subject,
      });
    }
    const r = reply as Mq9Reply;
    if (r.error !== "") throw Mq9ClientError.fromReply(r.error, answer.status, answer.retryAfterMs, subject);
    return r;
  }

  /**
   * Creates a mailbox ($mq9.AI.MAILBOX.CREATE): `name` (default: a
   * broker-generated unguessable address), `ttl` seconds (broker default
   * 86 400; 0 = never expires).
   * @throws Mq9ClientError mailbox_exists; invalid_request; quota_exceeded (mailbox quota)
   */
  async createMailbox(o: { name?: string; ttl?: number; signal?: AbortSignal } = {}): Promise<{ mailAddress: string }> {
    const body: Record<string, unknown> = {};
    if (o.name !== undefined) body.name = checked(o.name);
    if (o.ttl !== undefined) body.ttl = o.ttl;
    const r = await this.call(mq9Subjects.create(), body, { signal: o.signal });
    return { mailAddress: String(r.mail_address) };
  }

  /**
   * Sends a message ($mq9.AI.MSG.SEND). `msgId` is -1 for a delayed
   * message (it gets its id when it becomes visible).
   * @throws Mq9ClientError mailbox_not_found; invalid_request (bad option, payload over 1 MiB); quota_exceeded
   */
  async send(address: string, payload: Mq9Payload, o: SendOptions = {}): Promise<{ msgId: number }> {
    const r = await this.call(mq9Subjects.send(checked(address)), payload, { headers: sendHeaders(o), signal: o.signal });
    return { msgId: Number(r.msg_id) };
  }

  /**
   * Fetches messages ($mq9.AI.MSG.FETCH), in delivery order. FETCH never
   * moves a position: acknowledge with `message.ack()` (or {@link ack}).
   * @throws Mq9ClientError mailbox_not_found; invalid_request; quota_exceeded (too many groups / held FETCHes)
   */
  async fetch(address: string, o: FetchOptions = {}): Promise<Mq9Message[]> {
    return this.fetchAs(this, address, o);
  }

  /** fetch() whose messages use `owner` for ack() and reply(). */
  private async fetchAs(owner: MessageOwner, address: string, o: FetchOptions): Promise<Mq9Message[]> {
    const wait = Math.min(Math.max(o.maxWaitMs ?? DEFAULT_MAX_WAIT_MS, 0), MAX_WAIT_CAP_MS);
    const r = await this.call(mq9Subjects.fetch(checked(address)), fetchBody(o), { timeoutMs: this.timeoutMs + wait, signal: o.signal });
    return this.messages(owner, address, o.group ?? null, r);
  }

  /**
   * Acknowledges `msgId` for `group` ($mq9.AI.MSG.ACK; cumulative inside
   * the message's priority lane).
   * @throws Mq9ClientError mailbox_not_found; message_not_found; invalid_request (group never fetched, message not delivered to it)
   */
  async ack(address: string, group: string, msgId: number, o: { signal?: AbortSignal } = {}): Promise<void> {
    await this.call(mq9Subjects.ack(checked(address)), { group_name: group, mail_address: address, msg_id: msgId }, { signal: o.signal });
  }

  /**
   * Lists stored messages without moving any position ($mq9.AI.MSG.QUERY):
   * the newest `limit` matches, in msg_id order.
   * @throws Mq9ClientError mailbox_not_found; invalid_request
   */
  async query(address: string, o: QueryOptions = {}): Promise<Mq9Message[]> {
    const r = await this.call(mq9Subjects.query(checked(address)), queryBody(o), { signal: o.signal });
    return this.messages(this, address, null, r);
  }

  /**
   * Deletes one message ($mq9.AI.MSG.DELETE).
   * @throws Mq9ClientError message_not_found; mailbox_not_found; invalid_request (msgId not a non-negative integer)
   */
  async delete(address: string, msgId: number, o: { signal?: AbortSignal } = {}): Promise<void> {
    if (!Number.isSafeInteger(msgId) || msgId < 0) throw Mq9ClientError.client(`msg_id must be a whole number ≥ 0, not ${msgId}`);
    await this.call(mq9Subjects.delete(checked(address), msgId), new Uint8Array(0), { signal: o.signal });
  }

  /**
   * Creates a push subscription ($mq9.AI.PUSH.CREATE, docs/push.md): the
   * broker POSTs every message of `o.group` to `o.url`, signed with the
   * secret (`verifyPushSignature` checks it on the receiving side).
   * @returns the push_id, and the secret when the broker generated it (shown only here)
   * @throws Mq9ClientError mailbox_not_found; invalid_request (URL refused, bad option, group already pushed); quota_exceeded (push limit)
   */
  async createPush(address: string, o: PushOptions): Promise<{ pushId: string; secret?: string }> {
    const body: Record<string, unknown> = { group_name: o.group, url: o.url };
    if (o.secret !== undefined) body.secret = o.secret;
    if (o.maxAttempts !== undefined) body.max_attempts = o.maxAttempts;
    if (o.concurrency !== undefined) body.concurrency = o.concurrency;
    if (o.timeoutMs !== undefined) body.timeout_ms = o.timeoutMs;
    Object.assign(body, fetchBody({ deliver: o.deliver, fromTime: o.fromTime, fromId: o.fromId }));
    const r = await this.call(mq9Subjects.push("CREATE", checked(address)), body, { signal: o.signal });
    return r.secret === undefined ? { pushId: String(r.push_id) } : { pushId: String(r.push_id), secret: String(r.secret) };
  }

  /**
   * The mailbox's push subscriptions with their counters ($mq9.AI.PUSH.LIST; never the secret).
   * @throws Mq9ClientError mailbox_not_found
   */
  async listPushes(address: string, o: { signal?: AbortSignal } = {}): Promise<PushInfo[]> {
    const r = await this.call(mq9Subjects.push("LIST", checked(address)), {}, { signal: o.signal });
    return r.pushes as PushInfo[];
  }

  /**
   * Deletes a push subscription ($mq9.AI.PUSH.DELETE); its group stays, at its ack floors.
   * @throws Mq9ClientError invalid_request (`push subscription not found`); mailbox_not_found
   */
  async deletePush(address: string, pushId: string, o: { signal?: AbortSignal } = {}): Promise<void> {
    await this.call(mq9Subjects.push("DELETE", checked(address)), { push_id: pushId }, { signal: o.signal });
  }

  /**
   * Makes `address` an A2A push-notification receiver ($mq9.AI.A2A.RECEIVER.CREATE,
   * docs/a2a.md): a new receiver token (replacing an earlier one; shown only
   * here) and the URL `POST /a2a/push/<address>` on `o.baseUrl` (the broker's
   * HTTP origin, e.g. `https://broker.example`).
   * @returns the push config to hand to an A2A server
   * @throws Mq9ClientError mailbox_not_found
   */
  async a2aPushConfig(address: string, o: { baseUrl: string; signal?: AbortSignal }): Promise<A2aPushConfig> {
    const r = await this.call(mq9Subjects.a2aReceiver("CREATE", checked(address)), {}, { signal: o.signal });
    return { url: new URL(String(r.path), o.baseUrl).toString(), token: String(r.token) };
  }

  /** Removes `address`'s A2A receiver token: notifications are then refused 401. @throws Mq9ClientError mailbox_not_found */
  async deleteA2aReceiver(address: string, o: { signal?: AbortSignal } = {}): Promise<void> {
    await this.call(mq9Subjects.a2aReceiver("DELETE", checked(address)), {}, { signal: o.signal });
  }

  /**
   * The A2A task updates stored in `address`, in order, as an async iterator
   * (long-poll FETCH of consumer group `o.group`, default `a2a`, from the
   * earliest; messages without tag `a2a` are skipped; each update is acked
   * when the next is asked for). Ends on close() or `o.signal`.
   */
  a2aUpdates(address: string, o: A2aUpdatesOptions = {}): AsyncGenerator<A2aUpdate> {
    return a2aUpdatesOf(this.consume(address, { deliver: "earliest", ...o, group: o.group ?? "a2a" }));
  }

  /**
   * Consumes `address` as `o.group`: an async iterator that long-polls in a
   * loop, backs off on retryable errors (honouring `Retry-After`) and ends
   * on `close()` or `o.signal` (consume.ts).
   */
  consume(address: string, o: ConsumeOptions): Mq9Consumer {
    checked(address);
    if (!o.group) throw Mq9ClientError.client("consume() needs a consumer group (options.group)");
    const fetchOptions: FetchOptions = {
      group: o.group, deliver: o.deliver, fromTime: o.fromTime, fromId: o.fromId, numMsgs: o.numMsgs,
      maxWaitMs: o.maxWaitMs ?? CONSUME_MAX_WAIT_MS,
    };
    const signal = o.signal ? AbortSignal.any([o.signal, this.lifetime.signal]) : this.lifetime.signal;
    return new Mq9Consumer(this, (s, owner) => this.fetchAs(owner, address, { ...fetchOptions, signal: s }), { ...o, signal });
  }

  /**
   * Sends `payload` to `address` with this client's private reply mailbox
   * as `mq9-reply-to` and a fresh `mq9-correlation-id`, and resolves with
   * the answer (a message whose correlation id matches; `message.reply()`
   * on the other side sends one). See replies.ts.
   * @throws Mq9ClientError source "timeout" (no answer within `timeoutMs`); any SEND error
   */
  async request(address: string, payload: Mq9Payload, o: RequestOptions = {}): Promise<Mq9Message> {
    checked(address);
    const { timeoutMs = DEFAULT_TIMEOUT_MS, ...send } = o;
    return this.replies.request(timeoutMs, (replyTo, correlationId) => this.send(address, payload, { ...send, replyTo, correlationId }), o.signal);
  }

  /** Closes the connection; waiting request()s fail, consumers end (cleanly), later calls throw. */
  async close(): Promise<void> {
    if (this.lifetime.signal.aborted) return;
    this.lifetime.abort(new Error("client closed"));
    this.replies.close();
    await this.conn.close();
  }

  private messages(owner: MessageOwner, address: string, group: string | null, r: Mq9Reply): Mq9Message[] {
    const list = Array.isArray(r.messages) ? (r.messages as Mq9WireMessage[]) : [];
    return list.map((m) => new Mq9Message(owner, address, group, m));
  }
}
