/**
 * MortarClient: a Node client for MortarMQ v0 (spec §1–§2.1).
 *
 * - Pipelining: any number of requests in flight on one connection; the
 *   broker answers strictly in order and each answer settles the oldest
 *   pending request (matched by request_op).
 * - Write batching: frames queued in the same event-loop turn go out in one
 *   socket write (one WebSocket message), up to WRITE_CHUNK bytes each.
 * - Errors: every failure is a MortarClientError with the registry code,
 *   name and client action. publish() retries "retry-with-backoff" codes
 *   (with exponential backoff) when that is safe: always for idempotent
 *   producers, and for codes that guarantee nothing was committed otherwise.
 * - Idempotent producers: at most PRODUCER_DEDUPE_WINDOW (1024) publishes of
 *   one (topic, partition, producer_id) are in flight; more wait, in call
 *   order. With producer_seq assigned consecutively per (topic, partition),
 *   a resent seq is then always inside the broker's dedupe window, so every
 *   retry is appended exactly once (a duplicate returns the original sequence).
 * - Keepalive: a PING is sent when nothing was written for KEEPALIVE_MS, so
 *   an idle connection is not closed by the broker's 45 s timer.
 * - Pushes (MSG, NOTICE) take no request slot; they go to the Subscription
 *   they name (consumer.ts: subscribe()) and to `onPush` handlers.
 */
import {
  ConnectClientFlags, DeclareFlags, ErrorCode, FrameDecoder, KEEPALIVE_MS, Op, PRODUCER_DEDUPE_WINDOW, ServerFeatures, WIRE_VERSION,
  decodeConnectFeatures, decodeDeclareResult, decodePubResult, encodeFrameInto, frameSize, utf8Bytes,
  type DeclareResult, type Frame, type OkFrame, type PubFrame, type PubResult,
} from "../../wire/mortar";
import { retentionTail, topicRetention, type DeclareOptions, type TopicDeclared, type TopicRetention } from "./retention";
import { MortarClientError } from "./errors";
import { openTransport, type Transport } from "./transport";
import { Subscription, type SubscribeOptions } from "./consumer";
import { StartPolicy, SUB_PARTITION_ANY, SubFlags, decodeSubResult, type MsgFrame, type NoticeFrame } from "../../wire/mortar";

/** Frames are coalesced into writes of at most this many bytes (larger frames go alone). */
const WRITE_CHUNK = 64 * 1024;

/** Retry policy for retryable errors. */
export interface RetryOptions {
  /** Resends after the first failure (0 = no retry). Default 5. */
  attempts: number;
  /** First backoff, ms (doubles each time). Default 50. */
  baseDelayMs: number;
  /** Backoff cap, ms. Default 2000. */
  maxDelayMs: number;
}

/** Options for MortarClient.connect. */
export interface ConnectOptions {
  /** CONNECT token (empty for an open broker). */
  token?: string;
  /** Connect + CONNECT timeout, ms (default 10000). */
  timeoutMs?: number;
  /** Idle time before a keepalive PING, ms (default KEEPALIVE_MS = 30000; 0 disables). */
  keepaliveMs?: number;
  /** Default retry policy for publish(). */
  retry?: Partial<RetryOptions>;
}

/** Options for one publish(). */
export interface PublishOptions {
  /** Idempotent producer id (0 = non-idempotent, the default). */
  producerId?: bigint;
  /** Producer sequence (must be 0 when producerId is 0). */
  producerSeq?: bigint;
  /** Overrides the client's retry policy (`false` = no retry). */
  retry?: Partial<RetryOptions> | false;
}

/** PUB answer: the OK result plus a decoded dedupe flag. */
export interface PublishResult extends PubResult {
  /** True when this was a duplicate; `sequence` is the original one. */
  deduplicated: boolean;
}

/** Options for MortarClient.close. */
export interface CloseOptions {
  /**
   * Wait until every request in flight is answered and every publish() in
   * progress (retries and the idempotent-producer queue included) has
   * settled, then close. Requests made while draining are waited for too.
   * Default false: close at once; pending requests fail with CONNECTION_CLOSED.
   */
  drain?: boolean;
}

/** Topic metadata known to this client (from DECLARE). */
export interface TopicHandle {
  name: string;
  topicId: number;
  partitionCount: number;
}

interface PendingRequest {
  op: number;
  resolve: (f: OkFrame) => void;
  reject: (e: MortarClientError) => void;
}

/** Pushes kept for a subscription_id not registered yet (they can arrive in the same read as the SUB's OK). */
const MAX_ORPHAN_PUSHES = 10_000;

/** Codes whose meaning guarantees nothing was committed: safe to resend even without a producer id. */
const NOTHING_COMMITTED = new Set<number>([
  ErrorCode.BACKPRESSURE, ErrorCode.QUOTA_EXCEEDED, ErrorCode.RATE_LIMITED, ErrorCode.STORAGE_FULL, ErrorCode.INTERNAL_ERROR, ErrorCode.NOT_ENOUGH_REPLICAS,
]);

const DEFAULT_RETRY: RetryOptions = { attempts: 5, baseDelayMs: 50, maxDelayMs: 2000 };

/** Publishes in flight for one (topic, partition, producer_id), and the calls waiting for a place (FIFO). */
interface ProducerLane {
  inFlight: number;
  waiting: (() => void)[];
}

export class MortarClient {
  private readonly decoder = new FrameDecoder();
  private readonly pending: (PendingRequest | undefined)[] = [];
  private pendingHead = 0;
  private out = new Uint8Array(WRITE_CHUNK);
  private outLen = 0;
  private flushScheduled = false;
  private lastWriteAt = Date.now();
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private closeError: MortarClientError | null = null;
  private readonly pushHandlers: ((f: Frame) => void)[] = [];
  private readonly topics = new Map<string, TopicHandle>();
  private readonly retry: RetryOptions;
  private readonly subscriptions = new Map<number, Subscription>();
  private orphans: (MsgFrame | NoticeFrame)[] = [];
  /** Idempotent-producer lanes by (topic_id × 65536 + partition), then producer_id. */
  private readonly producerLanes = new Map<number, Map<bigint, ProducerLane>>();
  /** publish() calls waiting for a place in their producer lane, or sleeping before a retry (not in `inFlight`). */
  private waiting = 0;
  private idleWaiters: (() => void)[] = [];
  /** The broker's extensions (ServerFeatures bits) from its CONNECT answer; 0 for a broker without any. */
  private brokerFeatures = 0;

  private constructor(private readonly transport: Transport, opts: ConnectOptions) {
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    transport.onData((chunk) => this.receive(chunk));
    transport.onClose((reason) => this.shutdown(MortarClientError.closed(reason)));
    const every = opts.keepaliveMs ?? KEEPALIVE_MS;
    if (every > 0) {
      this.keepalive = setInterval(() => {
        if (Date.now() - this.lastWriteAt >= every) this.ping().catch(() => {});
      }, Math.max(50, Math.floor(every / 6))); // a PING leaves at most every × 7/6 (35 s) after the last write, well before 45 s
      this.keepalive.unref?.();
    }
  }

  /**
   * Connects and authenticates. `address`: `ws://` / `wss://` / `http://` /
   * `https://` (WebSocket to /v0/mortar) or `tcp://host:port` (raw TCP, e.g.
   * `mortarmq bridge`).
   * @throws MortarClientError (AUTH_FAILED, UNSUPPORTED_WIRE_VERSION, …);
   *   CONNECTION_CLOSED "broker unreachable at <address>: …" when the
   *   connection cannot be opened or closes before CONNECT is answered (e.g.
   *   a bridge whose broker is down)
   */
  static async connect(address: string, opts: ConnectOptions = {}): Promise<MortarClient> {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    let transport: Transport;
    try {
      transport = await openTransport(address, { timeoutMs });
    } catch (e) {
      throw MortarClientError.closed(`broker unreachable at ${address}: ${(e as Error).message}`, Op.CONNECT);
    }
    const client = new MortarClient(transport, opts);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const ok = await Promise.race([
        // FEATURES (extension): the broker answers which extensions it speaks; one without any ignores the bit.
        client.request({ op: Op.CONNECT, protocolVersion: WIRE_VERSION, clientFlags: ConnectClientFlags.FEATURES, token: utf8Bytes(opts.token ?? ""), reserved: 0 }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(MortarClientError.closed(`no CONNECT answer within ${timeoutMs} ms`, Op.CONNECT)), timeoutMs);
        }),
      ]);
      try {
        client.brokerFeatures = decodeConnectFeatures(ok.result);
      } catch {
        client.brokerFeatures = 0; // an answer we cannot read: assume no extensions
      }
    } catch (e) {
      const err = e as MortarClientError;
      const unreachable = err.source === "connection"
        ? MortarClientError.closed(`broker unreachable at ${address}: ${err.message}${/CONNECT/.test(err.message) ? "" : " before CONNECT was answered"}`, Op.CONNECT)
        : err;
      client.shutdown(unreachable);
      transport.close();
      throw unreachable;
    } finally {
      clearTimeout(timer);
    }
    return client;
  }

  /** True once the connection is closed. */
  get closed(): boolean {
    return this.closeError !== null;
  }

  /** Requests sent and not answered yet. */
  get inFlight(): number {
    return this.pending.length - this.pendingHead;
  }

  /** Registers a handler for broker pushes (MSG, NOTICE). */
  onPush(handler: (f: Frame) => void): void {
    this.pushHandlers.push(handler);
  }

  /**
   * Sends one request frame and resolves with its OK (rejects with the ERR
   * as MortarClientError). Takes one FIFO slot.
   * Rejects with a RangeError, sending nothing and taking no slot, when a
   * field does not fit the wire format (e.g. partition > 65535).
   */
  request(frame: Frame): Promise<OkFrame> {
    if (this.closeError) return Promise.reject(this.closeError);
    return new Promise<OkFrame>((resolve, reject) => {
      this.enqueue(frame); // throws before anything is queued when the frame cannot be encoded
      this.pending.push({ op: frame.op, resolve, reject });
    });
  }

  /** True when the broker takes topic retention settings (its CONNECT answer named the extension). */
  get supportsRetention(): boolean {
    return (this.brokerFeatures & ServerFeatures.RETENTION) !== 0;
  }

  /**
   * DECLARE: creates `name` with `partitions` partitions (and its `.dlq`
   * twin), or confirms it (created = 1 IDEMPOTENT_OK). Declaring
   * `<name>.dlq` returns the twin's id. With `opts.retention` (extension,
   * docs/protocol.md "Topic retention") the given settings are stored for a
   * new topic — or replace those of an existing one (an alter: created = 2
   * ALTERED when they changed) — and the answer's `retention` holds the
   * settings in force. Without it nothing but the v0 frame is sent.
   * @throws MortarClientError (PARTITION_COUNT_MISMATCH, INVALID_FLAGS, …);
   *   UNSUPPORTED_BY_BROKER (nothing sent) for retention settings when the
   *   broker does not speak the extension
   */
  async declare(name: string, partitions: number, opts: DeclareOptions = {}): Promise<TopicDeclared> {
    const retention = opts.retention ? retentionTail(opts.retention) : undefined;
    if (retention) this.requireRetention(Op.DECLARE);
    const ok = await this.request({
      op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: partitions, flags: retention ? DeclareFlags.RETENTION : 0,
      ...(retention ? { retention } : {}),
    });
    const r = decodeDeclareResult(ok.result);
    this.topics.set(name, { name, topicId: r.topicId, partitionCount: r.partitionCount });
    return declared(r);
  }

  /**
   * Changes the retention settings of the existing topic `name` (or of its
   * twin, `<name>.dlq`): the fields given replace the stored ones, the
   * others are kept. Resolves with the settings now in force (created = 2
   * ALTERED when something changed, 1 when they were already so). An empty
   * `retention` only reads them.
   * @throws MortarClientError UNKNOWN_TOPIC, INVALID_FLAGS, …;
   *   UNSUPPORTED_BY_BROKER (nothing sent) when the broker does not speak the extension
   */
  async alterTopic(name: string, retention: Partial<TopicRetention>): Promise<TopicDeclared & { retention: TopicRetention }> {
    this.requireRetention(Op.DECLARE);
    const r = await this.declare(name, 0, { retention });
    if (!r.retention) throw MortarClientError.protocol("the broker answered a retention DECLARE without its settings", Op.DECLARE);
    return r as TopicDeclared & { retention: TopicRetention };
  }

  private requireRetention(op: number): void {
    if (!this.supportsRetention) {
      throw new MortarClientError(0, "this broker does not support topic retention settings (its CONNECT answer names no extensions); upgrade the broker",
        op, "protocol", { name: "UNSUPPORTED_BY_BROKER", action: "give-up" });
    }
  }

  /** Deletes topic `name` and its `.dlq` twin (DECLARE with the DELETE flag). */
  async deleteTopic(name: string): Promise<TopicDeclared> {
    const ok = await this.request({ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: 0, flags: DeclareFlags.DELETE });
    this.topics.delete(name);
    this.topics.delete(`${name}.dlq`);
    return declared(decodeDeclareResult(ok.result));
  }

  /** Topic metadata this client learned from declare(). */
  topic(name: string): TopicHandle | undefined {
    return this.topics.get(name);
  }

  /**
   * PUB: appends `value` (with optional `key`) to `partition` of `topic`
   * (a topic_id, or a name declared on this client). Resolves after the
   * broker committed it; for a duplicate of an idempotent producer,
   * `deduplicated` is true and `sequence` is the original one. An
   * idempotent publish waits (in call order) while 1024 publishes of the
   * same (topic, partition, producer_id) are in flight (see class comment).
   * @throws MortarClientError with the broker's code (after retries, if any)
   */
  publish(
    topic: number | string,
    partition: number,
    key: Uint8Array | string | null,
    value: Uint8Array | string,
    opts: PublishOptions = {},
  ): Promise<PublishResult> {
    let topicId: number;
    try {
      topicId = this.topicId(topic, Op.PUB);
    } catch (e) {
      return Promise.reject(e); // errors always arrive as a rejection
    }
    const frame: PubFrame = {
      op: Op.PUB, topicId, partition,
      producerId: opts.producerId ?? 0n, producerSeq: opts.producerSeq ?? 0n, flags: 0,
      key: key === null ? new Uint8Array(0) : typeof key === "string" ? utf8Bytes(key) : key,
      value: typeof value === "string" ? utf8Bytes(value) : value,
    };
    const policy = opts.retry === false ? { ...this.retry, attempts: 0 } : { ...this.retry, ...opts.retry };
    return frame.producerId === 0n ? this.publishFrame(frame, policy) : this.publishInLane(frame, policy);
  }

  /** An idempotent publish through its (topic, partition, producer) lane: at most 1024 in flight. */
  private async publishInLane(frame: PubFrame, policy: RetryOptions): Promise<PublishResult> {
    let byProducer = this.producerLanes.get(frame.topicId * 0x10000 + frame.partition);
    if (!byProducer) this.producerLanes.set(frame.topicId * 0x10000 + frame.partition, (byProducer = new Map()));
    let lane = byProducer.get(frame.producerId);
    if (!lane) byProducer.set(frame.producerId, (lane = { inFlight: 0, waiting: [] }));
    if (lane.inFlight >= PRODUCER_DEDUPE_WINDOW || lane.waiting.length > 0) {
      this.waiting++;
      await new Promise<void>((r) => lane.waiting.push(r)); // the place is handed over by the finishing publish
      this.waiting--;
    } else {
      lane.inFlight++;
    }
    try {
      return await this.publishFrame(frame, policy);
    } finally {
      const next = lane.waiting.shift();
      if (next) next();
      else if (--lane.inFlight === 0) byProducer.delete(frame.producerId);
    }
  }

  /** Sends one PUB, retrying per `policy`. */
  private async publishFrame(frame: PubFrame, policy: RetryOptions): Promise<PublishResult> {
    for (let attempt = 0; ; attempt++) {
      try {
        const r = decodePubResult((await this.request(frame)).result);
        return { ...r, deduplicated: (r.resultFlags & 1) === 1 };
      } catch (e) {
        const err = e as MortarClientError;
        const safe = frame.producerId !== 0n || NOTHING_COMMITTED.has(err.code);
        if (attempt >= policy.attempts || !err.retryable || !safe || this.closed) throw err;
        this.waiting++;
        await sleep(Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt));
        this.waiting--;
      }
    }
  }

  /**
   * SUB: joins consumer group `group` on `topic` (a topic_id, or a name
   * declared on this client; a `.dlq` twin is subscribed by its id). The
   * group assigns partitions with NOTICEs, which the subscription confirms
   * itself; see Subscription for reading and settling messages.
   * @throws MortarClientError (UNKNOWN_TOPIC, INVALID_GROUP_NAME, …)
   */
  async subscribe(topic: number | string, group: string, opts: SubscribeOptions = {}): Promise<Subscription> {
    const topicId = this.topicId(topic, Op.SUB);
    const ok = await this.request({
      op: Op.SUB, group: utf8Bytes(group), topicId, partition: SUB_PARTITION_ANY,
      startPolicy: opts.startPolicy === "latest" ? StartPolicy.LATEST : StartPolicy.EARLIEST,
      creditCount: opts.creditCount ?? 0, creditBytes: opts.creditBytes ?? 0, flags: opts.pull ? SubFlags.PULL_MODE : 0,
    });
    const r = decodeSubResult(ok.result);
    const sub = new Subscription(
      { request: (f) => this.request(f), detach: (id) => this.subscriptions.delete(id) },
      r.subscriptionId, topicId, group, r.memberId, r.membershipEpoch, r.assignmentEpoch, !!opts.pull, opts,
    );
    this.subscriptions.set(sub.id, sub);
    const mine = this.orphans.filter((f) => (f.op === Op.MSG ? f.subscriptionId : f.groupId) === sub.id);
    this.orphans = this.orphans.filter((f) => (f.op === Op.MSG ? f.subscriptionId : f.groupId) !== sub.id);
    for (const f of mine) this.route(f);
    return sub;
  }

  /** PING; resolves with the round-trip time in ms. */
  async ping(): Promise<number> {
    const t = performance.now();
    await this.request({ op: Op.PING });
    return performance.now() - t;
  }

  /**
   * Flushes queued frames and closes the connection. By default pending
   * requests fail with CONNECTION_CLOSED; with `{ drain: true }` it first
   * waits for them (see CloseOptions).
   */
  async close(opts: CloseOptions = {}): Promise<void> {
    if (this.closeError) return;
    if (opts.drain) {
      this.flush();
      while (!this.closeError && (this.inFlight > 0 || this.waiting > 0)) {
        await new Promise<void>((r) => this.idleWaiters.push(r));
      }
      if (this.closeError) return;
    }
    this.flush();
    this.transport.close();
    this.shutdown(MortarClientError.closed("client closed the connection"));
  }

  // ------------------------------------------------------------ internals

  private topicId(topic: number | string, op: number): number {
    if (typeof topic === "number") return topic;
    const t = this.topics.get(topic);
    if (!t) throw new MortarClientError(ErrorCode.UNKNOWN_TOPIC, `topic "${topic}" was not declared on this client; call declare() first`, op, "protocol");
    return t.topicId;
  }

  /** Hands a push to its subscription (or keeps it until the subscription is registered). */
  private route(f: MsgFrame | NoticeFrame): void {
    const sub = this.subscriptions.get(f.op === Op.MSG ? f.subscriptionId : f.groupId);
    if (!sub) {
      this.orphans.push(f);
      if (this.orphans.length > MAX_ORPHAN_PUSHES) this.orphans.shift();
    } else if (f.op === Op.MSG) sub.onMessage(f);
    else sub.onNotice(f);
  }

  private enqueue(frame: Frame): void {
    const size = frameSize(frame);
    if (this.outLen + size > this.out.length) {
      this.flush();
      if (size > this.out.length) {
        const big = new Uint8Array(size);
        encodeFrameInto(frame, big, 0);
        this.write(big);
        return;
      }
    }
    this.outLen = encodeFrameInto(frame, this.out, this.outLen);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.outLen === 0) return;
    const bytes = this.out.slice(0, this.outLen);
    this.outLen = 0;
    this.write(bytes);
  }

  private write(bytes: Uint8Array): void {
    if (this.closeError) return;
    this.lastWriteAt = Date.now();
    try {
      this.transport.write(bytes);
    } catch (e) {
      this.shutdown(MortarClientError.closed(`write failed: ${(e as Error).message}`));
    }
  }

  private receive(chunk: Uint8Array): void {
    const { frames, error } = this.decoder.push(chunk);
    for (const f of frames) {
      if (f.op === Op.ERR && (f.requestOp === 0 || MortarClientError.fromErr(f).closes)) {
        // The broker closes after this ERR (framing error, timeout, auth, or any ERR not tied to a
        // request, e.g. BACKPRESSURE beyond the hard bound): every pending request fails with it.
        this.shutdown(MortarClientError.fromErr(f));
        this.transport.close();
        return;
      }
      if (f.op === Op.OK || f.op === Op.ERR) {
        const p = this.pending[this.pendingHead];
        if (!p) {
          this.fatal(`unexpected answer for op ${f.requestOp} with no request pending`);
          return;
        }
        if (f.requestOp !== p.op) {
          this.fatal(`answer for op ${f.requestOp} while op ${p.op} is the oldest pending request`);
          return;
        }
        this.pending[this.pendingHead++] = undefined;
        if (this.pendingHead > 4096 && this.pendingHead * 2 > this.pending.length) {
          this.pending.splice(0, this.pendingHead);
          this.pendingHead = 0;
        }
        if (f.op === Op.OK) p.resolve(f);
        else p.reject(MortarClientError.fromErr(f));
        if (this.idleWaiters.length) queueMicrotask(() => this.wakeIfIdle()); // after the caller's continuation ran
      } else if (f.op === Op.MSG || f.op === Op.NOTICE) {
        this.route(f);
        for (const h of this.pushHandlers) h(f);
      } else {
        this.fatal(`broker sent op ${f.op}, which only clients send`);
        return;
      }
    }
    if (error) this.fatal(`broker stream: ${error.message}`);
  }

  /** Wakes close({ drain: true }) callers once nothing is in flight (or the connection is gone). */
  private wakeIfIdle(): void {
    if (this.idleWaiters.length === 0) return;
    if (!this.closeError && (this.inFlight > 0 || this.waiting > 0)) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }

  private fatal(message: string): void {
    this.shutdown(MortarClientError.protocol(message));
    this.transport.close();
  }

  private shutdown(err: MortarClientError): void {
    if (this.closeError) return;
    this.closeError = err;
    clearInterval(this.keepalive);
    for (let i = this.pendingHead; i < this.pending.length; i++) {
      const p = this.pending[i];
      if (!p) continue;
      p.reject(err.source === "broker" ? err : MortarClientError.closed(err.message, p.op));
    }
    this.pending.length = 0;
    this.pendingHead = 0;
    for (const sub of [...this.subscriptions.values()]) sub.onClosed(err);
    this.orphans = [];
    this.wakeIfIdle();
  }
}

/** The SDK's view of a DECLARE answer. */
function declared(r: DeclareResult): TopicDeclared {
  const out: TopicDeclared = { topicId: r.topicId, partitionCount: r.partitionCount, created: r.created };
  if (r.retention) out.retention = topicRetention(r.retention);
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
