/**
 * Push delivery of one Mailbox (platform glue around state.ts; docs/push.md
 * "How delivery runs"). Each push subscription is a consumer group of the
 * mailbox whose member is an HTTPS endpoint: it takes messages in FETCH
 * order, at most `concurrency` at a time, and POSTs each (attempt.ts); the
 * outcome (a 2xx settles it, anything else is retried after the backoff,
 * after `max_attempts` it is copied to `<address>.dlq`, dead-letter.ts) is
 * recorded by ledger.ts. An attempt is counted in SQLite before its request
 * leaves (the output gate holds it until the write is durable): after a
 * crash the message is attempted again, never lost and never acknowledged
 * without a 2xx (at-least-once; `mq9-msg-id` is the idempotency key).
 *
 * The Mailbox's one alarm drives it (a live part of its scheduler,
 * shared/scheduler.ts): the run starts attempts and waits for their
 * answers, doing the mailbox's other work meanwhile, until nothing is in
 * flight and LINGER_MS passed (a stream of SENDs only wakes it); then each
 * subscription's `schedule` row says when it next needs the alarm. SENDs
 * are never slowed by an endpoint. Attempts per second are leased from the
 * tenant (lease.ts); in-flight payload bytes per mailbox are bounded
 * (PUSH_IN_FLIGHT_BUDGET_BYTES).
 */
import { priorityOfLane, pushHeaders, pushSigningKey, type PushCreateSpec, type PushInfo } from "../../../wire/mq9";
import { decodeTags, type MailboxMeta, type StoredMessage } from "../store";
import { earliest } from "../../shared/alarm-times";
import { GroupCommit } from "../../shared/groupcommit";
import { readBatch } from "../read-path";
import { ATTEMPT_TIMED_OUT, refusedByPolicy, sendAttempt } from "./attempt";
import { admitsBytes, nextPositions, startSlots, takeMessage, type AttemptOutcome } from "./state";
import type { PushHost } from "./host";
import { PushRuns, openOf, type Open, type Run } from "./runs";
import { PushLedger } from "./ledger";
import { createSubscription, removeSubscription } from "./admin";
import { deadLetterCopy } from "./dead-letter";
import { AttemptLease } from "./lease";

/** After a crash mid-attempt the message is retried this long after the attempt's timeout, ms. */
export const RETRY_GRACE_MS = 1_000;
/** The alarm handler keeps running this long after the last delivery activity, ms: messages sent meanwhile are taken at once, without a schedule write and a new alarm per SEND. */
export const LINGER_MS = 2_000;

/** The push subscriptions of one mailbox and their deliveries. */
export class PushDriver {
  private readonly runs = new PushRuns();
  private inFlight = 0;
  private inFlightBytes = 0;
  private copying = 0;
  /** Attempts leased from the tenant (lease.ts). */
  private readonly lease: AttemptLease;
  /** The alarm's run is open (shared/scheduler.ts; beginRun … endRun). */
  private running = false;
  /** Subrequests started in the current run (state.ts startSlots: the rest waits for the next run). */
  private spent = 0;
  /** Last time an attempt or copy started or ended, ms (the loop lingers LINGER_MS after it). */
  private activeAt = -Infinity;
  /** Messages became visible while the loop runs, and no step has looked since (afterSends). */
  private visibleSinceStep = false;
  /** Outcomes, counters and schedule rows (ledger.ts). */
  private readonly ledger: PushLedger;
  /**
   * Answers (of attempts and dead-letter copies) are recorded through a group commit (shared/groupcommit.ts):
   * concurrent answers share one turn and one commit; at the end of the batch the counters are written once per
   * subscription (ledger.ts endBatch) and the next attempts start, in the same commit.
   */
  private readonly answers: GroupCommit<() => void, void>;

  constructor(private readonly host: PushHost) {
    this.ledger = new PushLedger(host, this.runs);
    this.answers = new GroupCommit<() => void, void>((record) => record(), () => {
      const now = Date.now(); // the batch's end (before its commit): subscriptions that had answers start their next attempts
      for (const run of this.ledger.endBatch()) this.fill(run, now);
      return host.storage.sync();
    }, () => {});
    this.lease = new AttemptLease(() => host.leaseAttempts(), () => {
      if (this.running) this.step(Date.now());
      this.host.kick();
    });
  }

  /** Loads the subscriptions (object start); a subscription with work but no schedule row gets one due now. */
  load(now: number): void {
    this.ledger.load();
    this.ledger.writeDues((run) => (run.due === null ? this.ledger.dueOf(run, now, this.lease.throttledUntil) : run.due));
  }

  /** Number of subscriptions. */
  get size(): number {
    return this.runs.size;
  }

  /** The push_id delivering `group`, or null when the group is not pushed. */
  pushIdOf(group: string): string | null {
    return this.runs.ofGroup(group)?.cfg.pushId ?? null;
  }

  /** Attempts waiting for an answer now (gauge). */
  get attemptsInFlight(): number {
    return this.inFlight;
  }

  /** Unacknowledged messages over all subscriptions (gauge). */
  backlog(now: number): number {
    return this.ledger.backlog(now);
  }

  /** PUSH.CREATE (admin.ts createSubscription; same arguments, answer and errors); the alarm looks at the new subscription. */
  create(meta: MailboxMeta, spec: PushCreateSpec, startId: () => number, now: number): { pushId: string; secret?: string } {
    const r = createSubscription(this.host, this.runs, meta, spec, startId, now);
    this.changed();
    this.host.telemetry.touch();
    return r;
  }

  /** PUSH.LIST: every subscription (never the secret), in creation order. */
  list(now: number): PushInfo[] {
    return this.runs.list(this.host.pushes, now);
  }

  /** PUSH.DELETE (admin.ts removeSubscription): throws Mq9Error(push_not_found). */
  remove(pushId: string): void {
    removeSubscription(this.host, this.runs, pushId);
    this.changed();
    this.host.telemetry.touch();
  }

  /** The mailbox is gone (its tables dropped): forget everything, abort what is in flight. */
  clear(): void {
    for (const run of this.runs.values()) for (const o of run.open.values()) o.cancel?.abort();
    this.runs.clear();
    this.host.kick();
  }

  /** Messages became visible (SEND, a delayed message due): subscriptions with a free slot look again. */
  onVisible(now: number): void {
    if (this.runs.size === 0) return;
    for (const run of this.runs.values()) run.more = true;
    if (this.running) {
      this.host.keepArmed(now); // stored with the SEND: a crash before the message is taken still wakes the mailbox
      this.visibleSinceStep = true;
      this.host.kick();
      return;
    }
    const changes = this.ledger.writeDues((run) => (run.open.size < run.cfg.concurrency && (run.due === null || run.due > now) ? now : run.due));
    if (changes) this.host.rearm();
  }

  /** The alarm handler starts running deliveries. */
  beginRun(): void {
    this.running = true;
    this.spent = 0;
  }

  /** True while attempts, dead-letter copies or a budget lease are in flight (the alarm handler keeps waiting). */
  get busy(): boolean {
    return this.inFlight > 0 || this.copying > 0 || this.lease.leasing;
  }

  /**
   * The end of a batch of SENDs, in its turn (before its commit): while the
   * loop runs and messages became visible, the attempts they allow start
   * now, so their writes share the SENDs' commit (one commit and one
   * wake-up less per message than starting them from the loop's next turn).
   */
  afterSends(now: number): void {
    if (this.running && this.visibleSinceStep) this.step(now);
  }

  /** Times out the attempts past their deadline, and starts every attempt and dead-letter copy that can start now. */
  step(now: number): void {
    this.visibleSinceStep = false;
    for (const run of this.runs.values()) {
      for (const o of run.open.values()) {
        if (o.cancel && o.deadline <= now) {
          o.deadline = Infinity;
          o.cancel.abort(ATTEMPT_TIMED_OUT); // its answer (a timeout) is recorded like any other
        }
      }
      this.fill(run, now);
    }
  }

  /** True when the alarm handler may return: nothing in flight and no delivery activity for LINGER_MS (or the run's subrequests are spent). */
  done(now: number): boolean {
    return !this.busy && (now - this.activeAt >= LINGER_MS || this.spent >= this.host.subrequestsPerRun);
  }

  /** Attempts or copies that may start now: ≤ 6 connections open, ≤ the run's subrequest budget (state.ts startSlots). */
  private slots(): number {
    return startSlots({ inFlight: this.inFlight, copying: this.copying, leasing: this.lease.leasing, spent: this.spent }, this.host.subrequestsPerRun);
  }

  /** When the loop must look again without an event: an attempt times out, a retry comes due, a throttle ends, the watchdog needs moving, lingering ends. */
  nextWake(): number | null {
    let t: number | null = null;
    if (!this.busy && Number.isFinite(this.activeAt)) t = earliest(t, this.activeAt + LINGER_MS);
    for (const run of this.runs.values()) {
      for (const o of run.open.values()) {
        if (o.cancel) {
          if (Number.isFinite(o.deadline)) t = earliest(t, o.deadline);
        } else if (!o.copying) t = earliest(t, o.row.nextMs);
      }
      if (run.more && run.open.size < run.cfg.concurrency && this.lease.throttledUntil > Date.now()) t = earliest(t, this.lease.throttledUntil);
    }
    return t;
  }

  /** The alarm handler ends: each subscription's schedule row says when it needs the alarm next. */
  endRun(now: number): void {
    this.running = false;
    this.ledger.writeDues((run) => this.ledger.dueOf(run, now, this.lease.throttledUntil));
  }

  /** When the driver needs the alarm (for the scheduler): the earliest schedule row. */
  dueAt(): number | null {
    return this.ledger.dueAt();
  }

  // ---------------------------------------------------------------- deliveries

  /** Starts what `run` can start now: due retries and dead-letter copies, then new messages into free slots. */
  private fill(run: Run, now: number): void {
    const meta = this.host.meta();
    if (!meta || !this.runs.has(run)) return;
    for (const o of run.open.values()) {
      if (o.cancel || o.copying || o.row.nextMs > now) continue;
      if (this.slots() <= 0) return; // the next run (or a freed connection) takes it
      if (o.row.deadLetter) {
        this.copyToDeadLetter(run, o, meta, now);
        continue;
      }
      const m = this.host.store.message(o.row.msgId, now);
      if (!m) {
        this.ledger.settle(run, o, null); // deleted or expired meanwhile: nothing left to deliver
        continue;
      }
      if (!this.admit(m.size, now)) return;
      this.start(run, o, m, meta, now, false);
    }
    const free = Math.min(run.cfg.concurrency - run.open.size, this.slots());
    if (!run.more || free <= 0) return;
    const batch = this.untaken(run, free, now);
    if (batch.length < free) run.more = false;
    for (const m of batch) {
      if (!this.admit(m.size, now)) {
        run.more = true;
        return;
      }
      const o = openOf({ pushSeq: run.cfg.seq, msgId: m.msgId, lane: m.lane, attempts: 0, nextMs: now, lastError: null, deadLetter: false });
      run.open.set(m.msgId, o);
      run.cursor = takeMessage(run.cursor, m);
      this.start(run, o, m, meta, now, true);
    }
  }

  /** Up to `n` messages the run has not taken, in FETCH order. */
  private untaken(run: Run, n: number, now: number): StoredMessage[] {
    return readBatch(nextPositions(run.cursor), n, Infinity, this.host.laneTops(), (lane, floor, max) => this.host.store.readLane(lane, floor, max, now));
  }

  /** May an attempt of `size` bytes start now (in-flight byte budget, the tenant's attempt rate)? */
  private admit(size: number, now: number): boolean {
    if (!admitsBytes(this.inFlightBytes, size, this.host.inFlightBudgetBytes)) return false;
    return this.lease.take(now, () => this.spent < this.host.subrequestsPerRun && ++this.spent > 0); // a lease is a subrequest
  }

  /** Counts the attempt (stored before the request leaves) and sends it. */
  private start(run: Run, o: Open, m: StoredMessage, meta: MailboxMeta, now: number, taken: boolean): void {
    const h = this.host;
    o.row.attempts++;
    this.spent++;
    o.row.nextMs = now + run.cfg.timeoutMs + RETRY_GRACE_MS;
    h.storage.transactionSync(() => {
      h.pushes.putOpen(o.row);
      if (taken) h.store.saveGroup(run.cfg.group, run.cursor);
    });
    const cancel = new AbortController();
    o.cancel = cancel;
    o.deadline = now + run.cfg.timeoutMs;
    this.activeAt = now;
    this.inFlight++;
    h.telemetry.touch(); // the in-flight gauge changed
    this.inFlightBytes += m.size;
    run.key ??= pushSigningKey(run.cfg.secret);
    const headers = pushHeaders(
      {
        mailAddress: meta.address, msgId: m.msgId, priority: priorityOfLane(m.lane), key: m.key, tags: decodeTags(m.tags),
        createMs: m.createMs, replyTo: m.replyTo, correlationId: m.correlationId,
      },
      o.row.attempts, run.cfg.pushId,
    );
    const body = m.payload;
    const refused = refusedByPolicy(run.cfg.url, h.urlPolicy);
    (refused !== null ? Promise.resolve<AttemptOutcome>({ kind: "connection_error", detail: refused }) : run.key
      .then((key) => sendAttempt({ url: run.cfg.url, headers, body, key, timeoutMs: run.cfg.timeoutMs }, cancel.signal)))
      .catch((e: unknown): AttemptOutcome => ({ kind: "connection_error", detail: e instanceof Error ? e.message : String(e) }))
      .then((outcome) => this.answers.submit(() => {
        this.inFlight--;
        this.inFlightBytes -= m.size;
        this.activeAt = Date.now();
        o.cancel = null;
        o.deadline = Infinity;
        if (this.isOpen(run, o)) this.ledger.attempted(run, o, m.size, outcome);
        this.host.kick();
      }));
  }

  private isOpen(run: Run, o: Open): boolean {
    return this.runs.has(run) && run.open.get(o.row.msgId) === o;
  }

  /** max_attempts are used: copies the message to `<address>.dlq`, then settles it. */
  private copyToDeadLetter(run: Run, o: Open, meta: MailboxMeta, now: number): void {
    const h = this.host;
    const m = h.store.message(o.row.msgId, now);
    if (!m) {
      this.ledger.settle(run, o, null);
      return;
    }
    const { dlq, copy } = deadLetterCopy(meta, run.cfg, o.row, m, now);
    o.copying = true;
    this.copying++;
    this.spent++;
    this.activeAt = now;
    h.deadLetter(dlq, meta.ttlSec, copy)
      .then((r) => (r.ok ? null : r.error), (e: unknown) => (e instanceof Error ? e.message : String(e)))
      .then((failure) => this.answers.submit(() => {
        this.copying--;
        this.activeAt = Date.now();
        o.copying = false;
        if (this.isOpen(run, o)) this.ledger.copied(run, o, dlq, failure);
        this.host.kick();
      }));
  }

  /** A subscription was added or removed: the running loop looks again, or the alarm is re-armed. */
  private changed(): void {
    if (this.running) this.host.kick();
    else this.host.rearm();
  }
}
