/**
 * One MortarMQ v0 connection: decode → per-frame rules → answer in order
 * (spec §1, §2.1; DESIGN.md §4), sans-IO: every effect (authentication,
 * quotas, Registry, Partition and ConsumerGroup calls, socket writes) goes
 * through its port (port.ts), which the MortarSession Durable Object
 * executes; the session feeds it the byte stream and the calls of other
 * objects (Consumer.notice, wake, …). Everything protocol-related lives
 * here and below (consumer, credit, fetch loop, lanes, response queue), and
 * runs in Node against a fake port (test/unit/mortar-session.test.ts).
 *
 * - Frames are decoded as bytes arrive; each frame except a client ERR
 *   reserves a response slot at once, so answers leave in request order
 *   (ResponseQueue). A client OK takes a slot that is filled with nothing.
 * - PUB, PING, ACK/NACK, PULL, CREDIT, CONTROL_ACK and HEARTBEAT (not
 *   LEAVE) run without waiting; CONNECT, DECLARE, SUB, HEARTBEAT LEAVE and a
 *   PUB whose topic is not cached are barriers: later frames wait until
 *   they are done (a PUB after a DECLARE(DELETE) sees the delete).
 * - Before CONNECT only CONNECT/PING/ERR: any other op (a client OK too)
 *   gets NOT_CONNECTED and the connection closes. A client ERR is never
 *   answered; neither is a client OK after CONNECT. A second CONNECT gets
 *   ALREADY_CONNECTED; unknown tokens get AUTH_FAILED then close.
 * - A framing error (decoder) gets ERR then close, never resynchronised.
 * - Requests not yet answered are bounded (MAX_PENDING_BYTES of request
 *   bytes, MAX_PENDING_REQUESTS slots); a request beyond either bound gets
 *   BACKPRESSURE at once (unless nothing else is pending). Those answers
 *   queue too, so there is a hard bound: once MAX_QUEUED_SLOTS answers
 *   (2 × MAX_PENDING_REQUESTS) or MAX_QUEUED_ANSWER_BYTES of ready answers
 *   wait to be written, the next frame gets ONE closing BACKPRESSURE and the
 *   connection closes — a session never buffers without limit.
 * - Read-path ops go to Consumer (consumer.ts). SUB and HEARTBEAT LEAVE are
 *   barriers; ACK/NACK are batched per partition like PUB; a PULL waits
 *   without blocking later frames (their answers queue behind its answer).
 *   MSG and NOTICE pushes are written straight to the socket (`push`).
 */
import { Op } from "../../wire/mortar/constants";
import { encodeFrame, frameSize } from "../../wire/mortar/codec";
import { ErrorCode, MortarError, errFrame } from "../../wire/mortar/errors";
import type { ConnectFrame, DeclareFrame, Frame, PubFrame } from "../../wire/mortar/frames";
import { HeartbeatState } from "../../wire/mortar/constants";
import { encodeConnectFeatures, encodeDeclareResult, okFrame } from "../../wire/mortar/results";
import { FrameDecoder } from "../../wire/mortar/stream";
import { checkClientFrame, parseGroupName } from "../../wire/mortar/validate";
import { ConnectClientFlags, DeclareFlags, ServerFeatures } from "../../wire/mortar/constants";
import { retentionToWire } from "../shared/retention-config";
import type { TopicInfo } from "../registry/rpc";
import { faultOf, withDeadline } from "./faults";
import type { MortarPort } from "./port";
import { PubPipeline } from "./pub-pipeline";
import { ResponseQueue, type CloseAction } from "./responses";
import { TopicCache } from "./topic-cache";
import { Consumer, type Liveness } from "./consumer";

/** Bound on bytes of requests received but not answered yet (32 MiB). */
export const MAX_PENDING_BYTES = 32 * 1024 * 1024;
/** Bound on requests received but not yet written back (answers wait for older ones). */
export const MAX_PENDING_REQUESTS = 65_536;
/** Hard bound on answer slots not yet written (requests + BACKPRESSURE answers): beyond it the connection closes. */
export const MAX_QUEUED_SLOTS = 2 * MAX_PENDING_REQUESTS;
/** Hard bound on bytes of ready answers waiting behind an unanswered one (64 MiB): beyond it the connection closes. */
export const MAX_QUEUED_ANSWER_BYTES = 2 * MAX_PENDING_BYTES;
/** Text of a BACKPRESSURE answer (short and constant: a flood of refused frames must not be amplified). */
const BACKPRESSURE_TEXT = "session over its unanswered-request bound; retry later";

/** WebSocket close codes used. */
export const CloseCode = { NORMAL: 1000, PROTOCOL_ERROR: 1002, POLICY: 1008 } as const;

/** Who a Connection is. */
export interface ConnectionOptions {
  /** This session's Durable Object id (hex), where groups and partitions call back. */
  sessionId: string;
  /** The tenant when the connection is already authenticated (restored after hibernation), else null. */
  tenant?: string | null;
  /** Session-enforced group liveness (ConsumerIO.liveness; absent: every HEARTBEAT goes to the group). */
  liveness?: Liveness;
}

interface Pending {
  frame: Frame;
  /** The frame's body as received (op + payload): a PUB is forwarded in these bytes. */
  body: Uint8Array;
  slot: number;
}

export class Connection {
  readonly decoder = new FrameDecoder();
  private readonly responses = new ResponseQueue();
  private readonly pipeline: PubPipeline;
  private readonly topics = new TopicCache();
  /** The read path: subscriptions, credit, PULL, ACK/NACK, NOTICE. */
  readonly consumer: Consumer;
  private inbox: (Pending | undefined)[] = [];
  private inboxHead = 0;
  private draining = false;
  /** No more input is accepted (a closing error was queued). */
  private inputClosed = false;
  /** Queued requests after a closing error are not executed. */
  private halted = false;
  private closed = false;
  private writeScheduled = false;
  private readonly highWater = { pendingBytes: 0 };

  /** Tenant after a successful CONNECT, else null. */
  tenant: string | null;
  /** Bound on bytes of requests received but not answered (requests beyond it get BACKPRESSURE). */
  maxPendingBytes = MAX_PENDING_BYTES;
  /** Hard bound on answer slots not yet written (beyond it: one closing BACKPRESSURE). */
  maxQueuedSlots = MAX_QUEUED_SLOTS;

  /**
   * A connection whose effects go through `port`. `opts.tenant`: set when
   * the connection was authenticated before (the session woke from
   * hibernation).
   */
  constructor(private readonly port: MortarPort, opts: ConnectionOptions) {
    this.tenant = opts.tenant ?? null;
    this.pipeline = new PubPipeline({
      append: (topic, partition, batch) => this.port.append(topic, partition, batch),
      respond: (slot, frame) => this.responses.fill(slot, frame),
      answered: () => this.write(),
    });
    this.consumer = new Consumer({
      port,
      sessionId: opts.sessionId,
      topic: (topicId) => this.topic(topicId),
      respond: (slot, bytes, onWritten) => {
        this.responses.fill(slot, bytes, undefined, onWritten);
        this.writeSoon();
      },
      respondErr: (slot, code, op, message) => {
        this.respondErr(slot, code, op, message);
        this.writeSoon();
      },
      push: (bytes) => {
        if (!this.closed) this.port.send(bytes);
      },
      write: () => this.write(),
      live: () => !this.closed,
      changed: (subs) => this.port.subscriptions(subs),
      liveness: opts.liveness,
    });
  }

  /** True once the connection was closed (by either side). */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Feeds a chunk of the byte stream. Returns the number of complete frames
   * it finished (for the keepalive timer).
   */
  receive(chunk: Uint8Array): number {
    if (this.inputClosed) return 0;
    const { frames, bodies, error } = this.decoder.push(chunk);
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i]!;
      this.port.frameIn?.(f.op);
      this.enqueue(f, bodies[i]!);
    }
    if (error) this.fail(error);
    this.kick();
    return frames.length;
  }

  /** Queues a closing ERR (not tied to a request) after every pending answer. */
  fail(error: MortarError, code: number = CloseCode.PROTOCOL_ERROR): void {
    if (this.inputClosed) return;
    this.inputClosed = true;
    const slot = this.responses.reserve(0);
    this.responses.fill(slot, encodeFrame(error.toFrame()), { code, reason: error.name });
    this.write();
  }

  /**
   * The connection is over (the peer closed, the socket failed, or this side
   * closed it): stop reading and writing; members leave their groups.
   * Resolves once they did (best effort). Idempotent.
   */
  end(): Promise<void> {
    this.closed = true;
    this.inputClosed = true;
    this.halted = true;
    return this.shutdown();
  }

  private shutdownDone: Promise<void> | null = null;

  /** Shuts the read path down once. */
  private shutdown(): Promise<void> {
    this.shutdownDone ??= this.consumer.shutdown();
    return this.shutdownDone;
  }

  private enqueue(f: Frame, body: Uint8Array): void {
    if (f.op === Op.ERR) return; // a client ERR needs no answer
    const size = frameSize(f);
    const q = this.responses;
    if (q.pending >= this.maxQueuedSlots || q.readyBytes > MAX_QUEUED_ANSWER_BYTES) {
      this.fail(new MortarError(ErrorCode.BACKPRESSURE,
        `closing: ${q.pending} answers (${q.readyBytes} bytes ready) are waiting to be written; max ${this.maxQueuedSlots} answers, ${MAX_QUEUED_ANSWER_BYTES} bytes`),
      CloseCode.POLICY);
      return;
    }
    if (q.pending > 0 && (q.pendingBytes + size > this.maxPendingBytes || q.pending >= MAX_PENDING_REQUESTS)) {
      this.responses.fill(q.reserve(0), this.backpressureFrame(f.op));
      return;
    }
    this.inbox.push({ frame: f, body, slot: this.responses.reserve(size) });
    if (q.pendingBytes > this.highWater.pendingBytes) this.highWater.pendingBytes = q.pendingBytes;
  }

  /**
   * Request bytes held by this connection: accepted but unanswered now, and
   * the highest that ever was (the MAX_PENDING_BYTES bound, plus one frame
   * when nothing else was pending); plus the partial frame in the decoder
   * (at most one frame). For tests and operators (MortarSession.memory).
   */
  memory(): { pendingBytes: number; highWaterPendingBytes: number; readyAnswerBytes: number; partialFrameBytes: number } {
    return {
      pendingBytes: this.responses.pendingBytes,
      highWaterPendingBytes: this.highWater.pendingBytes,
      readyAnswerBytes: this.responses.readyBytes,
      partialFrameBytes: this.decoder.bufferedBytes,
    };
  }

  private kick(): void {
    if (!this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.inboxHead < this.inbox.length) {
        const item = this.inbox[this.inboxHead]!;
        this.inbox[this.inboxHead++] = undefined;
        if (this.halted) {
          this.responses.fill(item.slot, new Uint8Array(0));
          continue;
        }
        const wait = this.handle(item.frame, item.body, item.slot);
        if (wait) {
          this.pipeline.flush();
          this.consumer.flush();
          this.write();
          await wait;
        }
      }
      this.inbox = [];
      this.inboxHead = 0;
    } finally {
      this.draining = false;
    }
    this.pipeline.flush();
    this.consumer.flush();
    this.write();
  }

  /** Handles one request; returns a promise when later frames must wait for it. */
  private handle(f: Frame, body: Uint8Array, slot: number): Promise<void> | undefined {
    try {
      if (this.tenant === null && f.op !== Op.CONNECT && f.op !== Op.PING) {
        this.respondErr(slot, ErrorCode.NOT_CONNECTED, f.op, "CONNECT first: only CONNECT, PING and ERR are allowed before it");
        return;
      }
      if (f.op === Op.OK) {
        // OK flows both ways but is never a request (spec §2): nothing is written for it.
        this.responses.fill(slot, new Uint8Array(0));
        return;
      }
      if (f.op === Op.CONNECT && this.tenant !== null) {
        this.respondErr(slot, ErrorCode.ALREADY_CONNECTED, Op.CONNECT, "this connection is already connected");
        return;
      }
      const bad = checkClientFrame(f);
      if (bad) {
        this.respondErr(slot, bad.code, f.op, bad.message);
        return;
      }
      switch (f.op) {
        case Op.PUB: {
          const topic = this.topics.fresh(f.topicId, Date.now());
          if (topic) {
            this.pub(topic, f, body, slot);
            return;
          }
          return this.lookupThenPub(f, body, slot);
        }
        case Op.PING:
          this.responses.fill(slot, encodeFrame(okFrame(Op.PING)));
          return;
        case Op.CONNECT:
          return this.connect(f, slot);
        case Op.DECLARE:
          return this.declare(f, slot);
        case Op.SUB:
          return this.guard(this.consumer.subscribe(f, slot, parseGroupName(f.group) as string), f.op, slot);
        case Op.ACK:
        case Op.NACK:
          this.consumer.settleRequest(f, slot);
          return;
        case Op.PULL:
          this.consumer.pull(f, slot);
          return;
        case Op.HEARTBEAT: {
          const p = this.guard(this.consumer.heartbeat(f, slot), f.op, slot);
          return f.state === HeartbeatState.LEAVE ? p : undefined;
        }
        case Op.CONTROL_ACK:
          void this.guard(this.consumer.controlAck(f, slot), f.op, slot);
          return;
        case Op.CREDIT:
          this.consumer.credit(f, slot);
          return;
        default:
          this.respondErr(slot, ErrorCode.INTERNAL_ERROR, f.op, `op ${f.op} is not a request`);
          return;
      }
    } catch (e) {
      const fault = faultOf(e);
      this.respondErr(slot, fault.code, f.op, fault.message);
      return;
    }
  }

  /** Answers `slot` with INTERNAL_ERROR if `p` throws (the handler normally answers itself). */
  private guard(p: Promise<void>, op: number, slot: number): Promise<void> {
    return p.catch((e) => {
      const fault = faultOf(e);
      this.respondErr(slot, fault.code, op, fault.message);
      this.write();
    });
  }

  /** Topic metadata from the cache (1 s) or the Registry, or the error for the client. */
  private async topic(topicId: number): Promise<TopicInfo | { code: number; message: string }> {
    const cached = this.topics.fresh(topicId, Date.now());
    if (cached) return cached;
    try {
      const r = await withDeadline(this.port.lookup(topicId));
      if (!r.ok) return { code: r.code, message: r.message };
      this.topics.put(r.topic, Date.now());
      return r.topic;
    } catch (e) {
      return faultOf(e);
    }
  }

  /**
   * Queues an accepted PUB for its partition; the tenant's quotas
   * (objects/tenants/gate.ts) admit it inside the partition's lane, which
   * answers a refusal with QUOTA_EXCEEDED 0x4002.
   */
  private pub(topic: TopicInfo, f: PubFrame, body: Uint8Array, slot: number): void {
    if (f.partition >= topic.partitionCount) {
      this.respondErr(slot, ErrorCode.PARTITION_OUT_OF_RANGE, Op.PUB,
        `partition ${f.partition} is not below partition_count ${topic.partitionCount} of topic_id ${topic.topicId}`);
      return;
    }
    const refused = this.port.permit("mortar.publish", { name: topic.name });
    if (refused !== null) return this.respondErr(slot, ErrorCode.PERMISSION_DENIED, Op.PUB, refused);
    const bytes = f.key.length + f.value.length; // what the record stores (docs/tenants.md "Quotas")
    this.pipeline.submit(topic, f.partition, body, slot, this.port.admitPublish(bytes));
  }

  /**
   * Scopes of a DECLARE: deleting or altering (RETENTION) a topic needs
   * `mortar.admin`; a plain DECLARE (how clients learn a topic's id) is
   * allowed to a token that may administer, publish to or consume the
   * topic, but only `mortar.admin` may create it (`mayCreate`: the registry
   * answers PERMISSION_DENIED for a missing topic, see declare()).
   */
  private declarePermit(f: DeclareFrame): { refused: string | null; name: string; mayCreate: boolean } {
    const name = new TextDecoder().decode(f.topic);
    if (f.flags & (DeclareFlags.DELETE | DeclareFlags.RETENTION)) return { refused: this.port.permit("mortar.admin", { name }), name, mayCreate: true };
    const refused = this.port.permitAny(["mortar.admin", "mortar.publish", "mortar.consume"], name);
    return { refused, name, mayCreate: refused === null && this.port.permit("mortar.admin", { name }, true) === null };
  }

  private async lookupThenPub(f: PubFrame, body: Uint8Array, slot: number): Promise<void> {
    const t = await this.topic(f.topicId);
    if ("code" in t) this.respondErr(slot, t.code, Op.PUB, t.message);
    else this.pub(t, f, body, slot);
  }

  private async connect(f: ConnectFrame, slot: number): Promise<void> {
    const auth = await this.port.authenticate(new TextDecoder().decode(f.token) || undefined);
    if (!auth.ok) {
      const [code, message]: [number, string] = auth.reason === "connections" ? [ErrorCode.QUOTA_EXCEEDED, auth.message]
        : auth.reason === "unavailable" ? [ErrorCode.BACKPRESSURE, auth.message]
        : [ErrorCode.AUTH_FAILED, auth.reason === "missing" ? "a token is required" : auth.message];
      this.respondErr(slot, code, Op.CONNECT, message);
      return;
    }
    this.tenant = auth.tenant;
    // Extension (docs/protocol.md "Extensions"): a client that asks learns which tails this broker speaks.
    const features = f.clientFlags & ConnectClientFlags.FEATURES ? encodeConnectFeatures(ServerFeatures.RETENTION) : undefined;
    this.responses.fill(slot, encodeFrame(okFrame(Op.CONNECT, features)));
  }

  private async declare(f: DeclareFrame, slot: number): Promise<void> {
    const { refused, name, mayCreate } = this.declarePermit(f);
    if (refused !== null) return this.respondErr(slot, ErrorCode.PERMISSION_DENIED, Op.DECLARE, refused);
    try {
      const r = await withDeadline(this.port.declare(f.topic.slice(), f.partitionCount, f.flags, f.retention, mayCreate));
      if (!r.ok) {
        // a DECLARE that would have created the topic without mortar.admin: the refusal is logged and counted now
        const message = r.code === ErrorCode.PERMISSION_DENIED ? (this.port.permit("mortar.admin", { name }) ?? r.message) : r.message;
        this.respondErr(slot, r.code, Op.DECLARE, message);
        return;
      }
      if (f.flags & DeclareFlags.DELETE) this.topics.forgetPair(r.topicId);
      else this.topics.put(r.topic, Date.now());
      // The retention tail answers only a request that had the RETENTION flag (a v0 peer gets the 5-byte result).
      const retention = f.flags & DeclareFlags.RETENTION && r.topic.retention ? retentionToWire(r.topic.retention) : undefined;
      const result = encodeDeclareResult({ topicId: r.topicId, partitionCount: r.partitionCount, created: r.created, retention });
      this.responses.fill(slot, encodeFrame(okFrame(Op.DECLARE, result)));
    } catch (e) {
      const fault = faultOf(e);
      this.respondErr(slot, fault.code, Op.DECLARE, fault.message);
    }
  }

  private readonly backpressureFrames = new Map<number, Uint8Array>();

  /** The (shared, cached) BACKPRESSURE ERR answering a frame of `op`. */
  private backpressureFrame(op: number): Uint8Array {
    let b = this.backpressureFrames.get(op);
    if (!b) this.backpressureFrames.set(op, (b = encodeFrame(errFrame(ErrorCode.BACKPRESSURE, op, BACKPRESSURE_TEXT))));
    return b;
  }

  /** Answers `slot` with ERR; codes that close the connection also stop it. */
  private respondErr(slot: number, code: number, requestOp: number, message: string): void {
    const err = new MortarError(code, message, requestOp);
    let close: CloseAction | undefined;
    if (err.closes) {
      close = { code: code === ErrorCode.AUTH_FAILED ? CloseCode.POLICY : CloseCode.PROTOCOL_ERROR, reason: err.name };
      this.inputClosed = true;
      this.halted = true;
    }
    this.responses.fill(slot, encodeFrame(errFrame(code, requestOp, err.message)), close);
  }

  /** write() at the end of this turn (answers filled together leave in one message). */
  private writeSoon(): void {
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    queueMicrotask(() => {
      this.writeScheduled = false;
      this.write();
    });
  }

  /** Writes every answer that is ready, in order; closes after a closing one. */
  write(): void {
    if (this.closed) return;
    const { bytes, close, written } = this.responses.drain();
    if (bytes) this.port.send(bytes);
    for (const cb of written) cb();
    if (close) {
      this.closed = true;
      this.port.close(close.code, close.reason);
      void this.shutdown();
    }
  }
}
