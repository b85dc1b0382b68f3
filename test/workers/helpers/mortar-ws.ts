/**
 * Test helper: a raw MortarMQ v0 connection to the Worker under test over a
 * real WebSocket (SELF.fetch with Upgrade), with frame-level send/receive.
 */
import { SELF } from "cloudflare:test";
import { encodeFrames, FrameDecoder, Op, WIRE_VERSION, utf8Bytes, decodePubResult, decodeDeclareResult } from "../../../wire/mortar";
import type { Frame, OkFrame, ErrFrame, PubFrame } from "../../../wire/mortar";

export class WsConn {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | null = null;
  /** Bytes sent to and received from the broker (WebSocket message bytes). */
  bytesSent = 0;
  bytesReceived = 0;
  private readonly decoder = new FrameDecoder();
  private waiters: (() => void)[] = [];

  constructor(readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    ws.addEventListener("message", (ev) => {
      const data = ev.data as ArrayBuffer | string;
      this.bytesReceived += typeof data === "string" ? utf8Bytes(data).length : data.byteLength;
      const { frames, error } = this.decoder.push(typeof data === "string" ? utf8Bytes(data) : new Uint8Array(data));
      if (error) throw error;
      this.frames.push(...frames);
      this.wake();
    });
    ws.addEventListener("close", (ev) => {
      this.closed = { code: ev.code, reason: ev.reason };
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Opens a connection to /v0/mortar (or straight to a given MortarSession stub). */
  static async open(stub?: { fetch: typeof SELF.fetch }): Promise<WsConn> {
    const res = await (stub ?? SELF).fetch("http://broker/v0/mortar", { headers: { Upgrade: "websocket" } });
    if (res.status !== 101 || !res.webSocket) throw new Error(`upgrade failed: ${res.status}`);
    res.webSocket.accept();
    return new WsConn(res.webSocket);
  }

  /**
   * Sends frames (or raw bytes) as ONE binary message. To split a stream
   * across several messages use deliverInOrder (helpers/deliver.ts): the
   * pool can hand back-to-back messages to the object out of order.
   */
  send(frames: Frame[] | Uint8Array): void {
    const bytes = frames instanceof Uint8Array ? frames : encodeFrames(frames);
    this.bytesSent += bytes.length;
    this.ws.send(bytes);
  }

  /** Waits until at least `n` frames arrived (or the socket closed); returns the first n and removes them. */
  async take(n: number, timeoutMs = 5000): Promise<Frame[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length < n) {
      if (this.closed) throw new Error(`closed (${this.closed.code} ${this.closed.reason}) after ${this.frames.length}/${n} frames`);
      if (Date.now() > deadline) throw new Error(`timeout: ${this.frames.length}/${n} frames`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.frames.splice(0, n);
  }

  /** Waits for the close event. */
  async waitClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error("socket did not close");
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.closed;
  }

  /** CONNECT with `token` and expect OK. */
  async connect(token = ""): Promise<void> {
    this.send([connectFrame(token)]);
    const [f] = await this.take(1);
    expectOk(f, Op.CONNECT);
  }

  /** DECLARE and return the OK result (throws on ERR). */
  async declare(name: string, partitions: number, flags = 0) {
    this.send([{ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: partitions, flags }]);
    const [f] = await this.take(1);
    return decodeDeclareResult(expectOk(f, Op.DECLARE).result);
  }

  close(): void {
    try {
      this.ws.close(1000, "done");
    } catch {
      /* already closed */
    }
  }
}

export function connectFrame(token = "", version = WIRE_VERSION): Frame {
  return { op: Op.CONNECT, protocolVersion: version, clientFlags: 0, token: utf8Bytes(token), reserved: 0 };
}

export function pubFrame(topicId: number, partition: number, value: Uint8Array | string, opts: Partial<PubFrame> = {}): PubFrame {
  return {
    op: Op.PUB, topicId, partition, producerId: 0n, producerSeq: 0n, flags: 0, key: new Uint8Array(0),
    value: typeof value === "string" ? utf8Bytes(value) : value, ...opts,
  };
}

export function expectOk(f: Frame | undefined, requestOp: number): OkFrame {
  if (!f || f.op !== Op.OK) throw new Error(`expected OK for op ${requestOp}, got ${JSON.stringify(describe(f))}`);
  if (f.requestOp !== requestOp) throw new Error(`OK answers op ${f.requestOp}, expected ${requestOp}`);
  return f;
}

export function expectErr(f: Frame | undefined, code: number, requestOp?: number): ErrFrame {
  if (!f || f.op !== Op.ERR) throw new Error(`expected ERR 0x${code.toString(16)}, got ${JSON.stringify(describe(f))}`);
  if (f.code !== code) throw new Error(`ERR code 0x${f.code.toString(16)} (${new TextDecoder().decode(f.message)}), expected 0x${code.toString(16)}`);
  if (requestOp !== undefined && f.requestOp !== requestOp) throw new Error(`ERR request_op ${f.requestOp}, expected ${requestOp}`);
  return f;
}

/** The PUB result of an OK frame. */
export function pubResult(f: Frame | undefined) {
  return decodePubResult(expectOk(f, Op.PUB).result);
}

function describe(f: Frame | undefined): unknown {
  if (!f) return f;
  if (f.op === Op.ERR) return { op: "ERR", code: f.code, msg: new TextDecoder().decode(f.message) };
  return { op: f.op };
}

/** Byte-for-byte equality (without per-byte diff output on a 16 MiB mismatch). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
