/**
 * The pipelined publish loop behind `mortarmq pub`: routes each message to a
 * partition, numbers it for the idempotent producer (per partition, from 1),
 * keeps at most `inFlight` publishes (and `maxInFlightBytes`) outstanding on
 * the one connection, and
 * counts the outcome. Transport-free: the caller passes `send` (the SDK's
 * publish), so the loop is unit-tested without a broker. An abort signal
 * (Ctrl-C in `pub`) stops reading at once — also while waiting for input —
 * and the loop then waits a bounded time for the answers still outstanding.
 */
import type { PartitionRouter } from "./partition";

/** One message to publish; `line` is its 1-based input position (for error reports). */
export interface OutgoingMessage {
  line: number;
  key: Uint8Array | null;
  value: Uint8Array;
}

/** What `send` resolves with (a subset of the SDK's PublishResult). */
export interface SendResult {
  sequence: bigint;
  deduplicated: boolean;
}

/** Publishes one message; rejects with the failure. `producerSeq` is 0n for a non-idempotent publish. */
export type SendFn = (partition: number, key: Uint8Array | null, value: Uint8Array, producerSeq: bigint) => Promise<SendResult>;

/** One failed message. */
export interface PublishFailure {
  line: number;
  partition: number;
  error: unknown;
}

/** Per-partition outcome. */
export interface PartitionSummary {
  partition: number;
  /** Appended or deduplicated. */
  published: number;
  /** Lowest and highest sequence answered (null when nothing was). */
  firstSequence: bigint | null;
  lastSequence: bigint | null;
}

/** The outcome of one publish run. */
export interface PublishSummary {
  /** Messages the broker answered OK (new appends and duplicates). */
  published: number;
  /** Of those, answered as duplicates of an earlier publish. */
  deduplicated: number;
  failed: number;
  /** Value bytes of the published messages. */
  bytes: number;
  elapsedMs: number;
  partitions: PartitionSummary[];
  /** The first `maxErrors` failures answered, sorted by input line. */
  errors: PublishFailure[];
  /** Why the run stopped before the end of the input (the connection closed, the signal's reason), else null. */
  stopped: string | null;
  /** Publishes sent but still unanswered when the run ended (only after a stop whose drain timed out): outcome unknown. */
  unanswered: number;
}

/** How long a stopped run waits for outstanding answers by default, ms. */
export const DEFAULT_DRAIN_MS = 10_000;

/** Options for publishAll. */
export interface PublishAllOptions {
  router: PartitionRouter;
  /** Non-zero: number messages per partition from 1 (idempotent producer); 0n: producer_seq 0. */
  producerId: bigint;
  /** Publishes outstanding at most (≥ 1). */
  inFlight: number;
  /** Value + key bytes outstanding at most (a larger message is still sent when nothing is outstanding). Default unlimited. */
  maxInFlightBytes?: number;
  send: SendFn;
  /** True once the connection is gone: stop reading input. */
  isClosed?: () => boolean;
  /** Aborted: stop reading input (summary `stopped` = the reason when it is a string, else "interrupted"). */
  signal?: AbortSignal;
  /** After an abort, wait at most this long for the outstanding answers, ms (default DEFAULT_DRAIN_MS). */
  drainMs?: number;
  /** Failures kept in the summary (default 10). */
  maxErrors?: number;
  /** Called after each answer with the running counts. */
  onProgress?: (answered: number, failed: number) => void;
  /** Clock, ms (default performance.now). */
  now?: () => number;
}

/**
 * Publishes every message of `messages` and resolves when all were answered —
 * or, once `signal` aborted, when the outstanding ones were answered or
 * `drainMs` passed (the rest is counted as `unanswered`). Never rejects for a
 * failed publish (it is counted); rejects only when reading `messages` throws.
 * On abort the input iterator is closed without waiting for a pending read;
 * the caller destroys the underlying stream (a read from a terminal may
 * otherwise never end).
 */
export async function publishAll(messages: AsyncIterable<OutgoingMessage> | Iterable<OutgoingMessage>, o: PublishAllOptions): Promise<PublishSummary> {
  const now = o.now ?? (() => performance.now());
  const maxErrors = o.maxErrors ?? 10;
  const started = now();
  const seqs = new Map<number, bigint>();
  const parts = new Map<number, PartitionSummary>();
  const errors: PublishFailure[] = [];
  let published = 0;
  let deduplicated = 0;
  let failed = 0;
  let bytes = 0;
  let outstanding = 0;
  let outstandingBytes = 0;
  const maxBytes = o.maxInFlightBytes ?? Infinity;
  let stopped: string | null = null;
  let wake: (() => void) | null = null;
  const settle = (size: number) => {
    outstanding--;
    outstandingBytes -= size;
    o.onProgress?.(published + failed, failed);
    const w = wake;
    wake = null;
    w?.();
  };

  const input = Symbol.asyncIterator in messages ? messages[Symbol.asyncIterator]() : messages[Symbol.iterator]();
  const aborted = new Promise<typeof ABORTED>((r) => {
    if (o.signal?.aborted) r(ABORTED);
    else o.signal?.addEventListener("abort", () => r(ABORTED), { once: true });
  });
  /** Stops reading: the reason, and the input closed without waiting for a pending read. */
  const stop = () => {
    stopped = typeof o.signal?.reason === "string" ? o.signal.reason : "interrupted";
    void Promise.resolve(input.return?.()).catch(() => {});
  };
  for (;;) {
    const next = o.signal ? await Promise.race([input.next(), aborted]) : await input.next();
    if (next === ABORTED) {
      stop();
      break;
    }
    if (next.done) break;
    const m = next.value;
    const size = m.value.length + (m.key?.length ?? 0);
    while (!o.signal?.aborted && (outstanding >= o.inFlight || (outstanding > 0 && outstandingBytes + size > maxBytes))) {
      await Promise.race([new Promise<void>((r) => (wake = r)), aborted]);
    }
    if (o.signal?.aborted) {
      stop();
      break;
    }
    if (o.isClosed?.()) {
      stopped = "the connection closed";
      break;
    }
    const partition = o.router.route(m.key);
    let seq = 0n;
    if (o.producerId !== 0n) {
      seq = (seqs.get(partition) ?? 0n) + 1n;
      seqs.set(partition, seq);
    }
    outstanding++;
    outstandingBytes += size;
    o.send(partition, m.key, m.value, seq).then(
      (r) => {
        published++;
        if (r.deduplicated) deduplicated++;
        bytes += m.value.length;
        const p = parts.get(partition) ?? { partition, published: 0, firstSequence: null, lastSequence: null };
        p.published++;
        if (p.firstSequence === null || r.sequence < p.firstSequence) p.firstSequence = r.sequence;
        if (p.lastSequence === null || r.sequence > p.lastSequence) p.lastSequence = r.sequence;
        parts.set(partition, p);
        settle(size);
      },
      (error: unknown) => {
        failed++;
        if (errors.length < maxErrors) errors.push({ line: m.line, partition, error });
        settle(size);
      },
    );
  }
  // Every answer, or — after an abort — as many as arrive within drainMs.
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drainLimit = o.signal?.aborted
    ? new Promise<void>((r) => (timer = setTimeout(() => r(void (timedOut = true)), o.drainMs ?? DEFAULT_DRAIN_MS)))
    : new Promise<void>(() => {});
  while (outstanding > 0 && !timedOut) await Promise.race([new Promise<void>((r) => (wake = r)), drainLimit]);
  clearTimeout(timer);
  errors.sort((a, b) => a.line - b.line);
  return {
    published, deduplicated, failed, bytes,
    elapsedMs: now() - started,
    partitions: [...parts.values()].sort((a, b) => a.partition - b.partition),
    errors,
    stopped,
    unanswered: outstanding,
  };
}

const ABORTED = Symbol("aborted");
