/**
 * Push delivery of one Mailbox (platform glue around state.ts; docs/push.md
 * "How delivery runs"). Each push subscription is a consumer group of the
 * mailbox whose member is an HTTPS endpoint:
 *
 * - It takes messages in FETCH order (priority lanes, FIFO inside each),
 *   at most `concurrency` at a time (1 = strictly one after the other),
 *   and POSTs each (attempt.ts). A 2xx settles the message and moves the
 *   group's ack floors (state.ts pushFloors: never backwards, never past
 *   an open message); any other answer, a network error or a timeout is a
 *   failed attempt, retried after the backoff; after `max_attempts` the
 *   message is copied to `<address>.dlq` (Mailbox.deadLetter, idempotent
 *   by source) and the group moves on.
 * - Everything that matters is in SQLite (push/store.ts) before the request
 *   leaves: an attempt is counted when it starts (the output gate holds the
 *   outbound request until that write is durable), so after a crash the
 *   message is attempted again, never lost and never acknowledged without
 *   a 2xx (at-least-once; `mq9-msg-id` is the receiver's idempotency key).
 * - The Mailbox's one alarm drives it (a live part of its scheduler,
 *   shared/scheduler.ts): the alarm's run starts attempts and waits for their
 *   answers, doing the mailbox's other due work meanwhile, until nothing is
 *   in flight; then each
 *   subscription's `schedule` row (kind `push`) holds when it next needs
 *   the alarm (a retry, or now when messages arrived while it was idle).
 *   While the handler runs (and for LINGER_MS after its last activity, so
 *   that a stream of SENDs only wakes it), the stored alarm is kept at most
 *   WATCHDOG_MS ahead, so a crash mid-run resumes within that time after
 *   restart.
 * - SENDs are never slowed by an endpoint: attempts are awaited by the
 *   alarm handler, not by any request, and a Durable Object accepts other
 *   events while one awaits a fetch. A SEND only wakes the driver.
 * - Attempts per second are leased from the tenant (TenantDirectory,
 *   PUSH_MAX_ATTEMPTS_PER_S); in-flight payload bytes per mailbox are
 *   bounded (PUSH_IN_FLIGHT_BUDGET_BYTES).
 */
import {
  MAX_GROUPS_PER_MAILBOX,
  MAX_PUSHES_PER_MAILBOX,
  Mq9Error,
  deadLetterAddress,
  echo,
  mq9Messages,
  priorityOfLane,
  checkPushUrl,
  pushHeaders,
  pushSigningKey,
  type DeadLetterInfo,
  type Lane,
  type PushCreateSpec,
  type PushInfo,
  type PushUrlPolicy,
} from "../../../wire/mq9";
import type { GroupCursor } from "../cursor";
import type { MailboxResult } from "../rpc";
import { decodeTags, type MailboxMeta, type MailboxStore, type StoredMessage } from "../store";
import type { MailboxTelemetry } from "../telemetry";
import { earliest } from "../../shared/alarm-times";
import { GroupCommit } from "../../shared/groupcommit";
import { ATTEMPT_TIMED_OUT, sendAttempt } from "./attempt";
import { readBatch } from "../read-path";
import {
  admitsBytes, afterFailure, backoffMs, describeOutcome, newPushId, newPushSecret, nextPositions, pushFloors,
  pushStartCursor, startSlots, takeMessage, type AttemptOutcome, type BackoffPolicy,
} from "./state";
import type { OpenRow, PushConfig, PushStats, PushStore, StatsChange } from "./store";

/** After a crash mid-attempt the message is retried this long after the attempt's timeout, ms. */
export const RETRY_GRACE_MS = 1_000;
/**
 * The alarm handler keeps running this long after the last delivery
 * activity, ms: messages sent meanwhile are taken at once, without a
 * schedule write and a new alarm per SEND.
 */
export const LINGER_MS = 2_000;
/** After the tenant's attempt budget came back empty, ask again after this long, ms. */
export const THROTTLE_MS = 100;
/** Leased attempts not used within this long are dropped (they must not pile up past the tenant's burst), ms. */
const LEASE_TTL_MS = 1_000;

/** A dead-letter copy as the source sends it to its `.dlq` mailbox (Mailbox.deadLetter). */
export interface DeadLetterCopy {
  lane: Lane;
  key: string | null;
  tags: string[];
  payload: Uint8Array;
  replyTo: string | null;
  correlationId: string | null;
  info: DeadLetterInfo;
  /** The source message (`<address>/<push_id>/<msg_id>`): a copy resent after a lost answer is stored once. */
  ref: string;
}

/** What the driver needs from its Mailbox. */
export interface PushHost {
  storage: DurableObjectStorage;
  store: MailboxStore;
  pushes: PushStore;
  telemetry: MailboxTelemetry;
  backoff: BackoffPolicy;
  /** The endpoint rules now (push-config.ts pushPolicy): checked again before every attempt, not only at CREATE. */
  urlPolicy: PushUrlPolicy;
  /** In-flight payload bytes per mailbox (config.ts PUSH_IN_FLIGHT_BUDGET_BYTES). */
  inFlightBudgetBytes: number;
  /** Subrequests (attempts, dead-letter copies, leases) one run starts at most (push-config.ts PUSH_SUBREQUESTS_PER_RUN). */
  subrequestsPerRun: number;
  /** The mailbox row, null when there is no mailbox. */
  meta(): MailboxMeta | null;
  /** Highest stored msg_id per lane (-1 = none; may be stale-high). */
  laneTops(): readonly number[];
  /** Re-arms the alarm (the push schedule changed). */
  rearm(): void;
  /** Wakes the alarm's open run (an answer came, a lease ended): it looks again (shared/scheduler.ts kick). */
  kick(): void;
  /** While the alarm's run is open, keeps the stored alarm close (a crash resumes soon; shared/scheduler.ts keepArmed). */
  keepArmed(now: number): void;
  /** Stores `copy` in mailbox `dlqAddress` of the same tenant (created with `ttlSec` when missing). */
  deadLetter(dlqAddress: string, ttlSec: number, copy: DeadLetterCopy): Promise<MailboxResult<{ msgId: number }>>;
  /** Leases attempts from the tenant's budget: how many may start now (Infinity = no limit). */
  leaseAttempts(): Promise<number>;
  /** [0, 1) for jitter. */
  random(): number;
  /** Fills bytes with randomness (ids, secrets). */
  fillRandom(bytes: Uint8Array): void;
}

/** An open message in memory. */
interface Open {
  row: OpenRow;
  /** Set while an attempt is in flight. */
  cancel: AbortController | null;
  /** When the attempt in flight times out (ms); Infinity once it was aborted for it. */
  deadline: number;
  /** A dead-letter copy is being stored. */
  copying: boolean;
  /** Failed tries to store the dead-letter copy (its own backoff). */
  copyFailures: number;
}

/** A subscription in memory. */
interface Run {
  cfg: PushConfig;
  stats: PushStats;
  /** Mirror of its group's row in `groups`. */
  cursor: GroupCursor;
  open: Map<number, Open>;
  /** Mirror of its `schedule` row. */
  due: number | null;
  /** There may be messages it has not taken (false once a read came back short; a SEND sets it). */
  more: boolean;
  key: Promise<CryptoKey> | null;
  /** Counter changes of the answers being recorded, written once at the end of their batch. */
  pending: StatsChange | null;
}

/** The push subscriptions of one mailbox and their deliveries. */
export class PushDriver {
  private readonly runs = new Map<number, Run>();
  private readonly byGroup = new Map<string, Run>();
  private inFlight = 0;
  private inFlightBytes = 0;
  private copying = 0;
  private leasing = false;
  private tokens = 0;
  private tokensUntil = 0;
  private throttledUntil = 0;
  /** The alarm's run is open (shared/scheduler.ts; beginRun … endRun). */
  private running = false;
  /** Subrequests started in the current run (state.ts startSlots: the rest waits for the next run). */
  private spent = 0;
  /** Last time an attempt or copy started or ended, ms (the loop lingers LINGER_MS after it). */
  private activeAt = -Infinity;
  /** Messages became visible while the loop runs, and no step has looked since (afterSends). */
  private visibleSinceStep = false;
  /** Subscriptions with answers recorded in the current batch: they start their next attempts at its end. */
  private readonly answeredRuns = new Set<Run>();
  /**
   * Answers (of attempts and dead-letter copies) are recorded through a
   * group commit (shared/groupcommit.ts): one arriving while the commit of an
   * earlier one is in flight waits and is recorded with the others in one
   * turn, so concurrent attempts share commits (locally each commit is an
   * fsync on workerd's main thread). At the end of the batch (endBatch) the
   * counters are written once per subscription and the next attempts start
   * together, in the same commit.
   */
  private readonly answers: GroupCommit<() => void, void>;

  constructor(private readonly host: PushHost) {
    this.answers = new GroupCommit<() => void, void>((record) => record(), () => {
      this.endBatch();
      return host.storage.sync();
    }, () => {});
  }

  /** Loads the subscriptions (object start); a subscription with work but no schedule row gets one due now. */
  load(now: number): void {
    this.runs.clear();
    this.byGroup.clear();
    const h = this.host;
    const dues = h.pushes.dueTimes();
    for (const { config, stats } of h.pushes.loadPushes()) {
      const run: Run = {
        cfg: config, stats, cursor: h.store.loadGroup(config.group) ?? pushStartCursor(null, 0),
        open: new Map(), due: dues.get(config.seq) ?? null, more: false, key: null, pending: null,
      };
      run.more = this.untakenBelowTops(run);
      this.runs.set(config.seq, run);
      this.byGroup.set(config.group, run);
    }
    for (const row of h.pushes.loadOpen()) this.runs.get(row.pushSeq)?.open.set(row.msgId, { row, cancel: null, deadline: Infinity, copying: false, copyFailures: 0 });
    this.writeDues((run) => (run.due === null ? this.dueOf(run, now) : run.due));
  }

  /** Number of subscriptions. */
  get size(): number {
    return this.runs.size;
  }

  /** The push_id delivering `group`, or null when the group is not pushed. */
  pushIdOf(group: string): string | null {
    return this.byGroup.get(group)?.cfg.pushId ?? null;
  }

  /** Attempts waiting for an answer now (gauge). */
  get attemptsInFlight(): number {
    return this.inFlight;
  }

  /** Unacknowledged messages over all subscriptions (gauge). */
  backlog(now: number): number {
    let n = 0;
    for (const run of this.runs.values()) n += this.host.pushes.backlog(run.cursor.floors, now);
    return n;
  }

  /**
   * PUSH.CREATE on mailbox `meta` with a checked `spec` (url normalized).
   * `startId` names the first msg_id of `spec.deliver`. Throws Mq9Error:
   * group_pushed (the group already has a push), too_many_requests
   * (MAX_PUSHES_PER_MAILBOX, or a new group beyond MAX_GROUPS_PER_MAILBOX).
   * Returns the push_id and, when it was generated, the secret.
   */
  create(meta: MailboxMeta, spec: PushCreateSpec, startId: () => number, now: number): { pushId: string; secret?: string } {
    const h = this.host;
    const existing = this.byGroup.get(spec.group);
    if (existing) throw new Mq9Error("group_pushed", mq9Messages.groupPushed(spec.group, meta.address, existing.cfg.pushId, "PUSH.CREATE"));
    if (this.runs.size >= MAX_PUSHES_PER_MAILBOX) {
      throw new Mq9Error("too_many_requests", `mailbox ${echo(meta.address)} already has ${MAX_PUSHES_PER_MAILBOX} push subscriptions: DELETE one first`);
    }
    const stored = h.store.loadGroup(spec.group);
    if (!stored && h.store.groupCount() >= MAX_GROUPS_PER_MAILBOX) {
      throw new Mq9Error("too_many_requests", `mailbox ${echo(meta.address)} already has ${MAX_GROUPS_PER_MAILBOX} consumer groups: use an existing group_name`);
    }
    const cursor = pushStartCursor(stored, startId());
    const secret = spec.secret ?? newPushSecret((b) => h.fillRandom(b));
    const cfg: Omit<PushConfig, "seq"> = {
      pushId: newPushId((b) => h.fillRandom(b)), group: spec.group, url: spec.url, secret,
      maxAttempts: spec.maxAttempts, concurrency: spec.concurrency, timeoutMs: spec.timeoutMs, createdMs: now,
    };
    const seq = h.storage.transactionSync(() => {
      h.store.saveGroup(spec.group, cursor);
      const s = h.pushes.insertPush(cfg);
      h.pushes.setDue(s, now);
      return s;
    });
    const run: Run = {
      cfg: { ...cfg, seq }, cursor, open: new Map(), due: now, more: true, key: null, pending: null,
      stats: { delivered: 0, failed: 0, deadLettered: 0, lastError: null, lastSuccessMs: null, lastFailureMs: null },
    };
    this.runs.set(seq, run);
    this.byGroup.set(spec.group, run);
    this.changed();
    h.telemetry.touch();
    return spec.secret === null ? { pushId: cfg.pushId, secret } : { pushId: cfg.pushId };
  }

  /** PUSH.LIST: every subscription (never the secret), in creation order. */
  list(now: number): PushInfo[] {
    return [...this.runs.values()].map((run) => ({
      push_id: run.cfg.pushId,
      group_name: run.cfg.group,
      url: run.cfg.url,
      max_attempts: run.cfg.maxAttempts,
      concurrency: run.cfg.concurrency,
      timeout_ms: run.cfg.timeoutMs,
      state: [...run.open.values()].some((o) => o.row.lastError !== null) ? "retrying" : "active",
      delivered: run.stats.delivered,
      failed: run.stats.failed,
      dead_lettered: run.stats.deadLettered,
      last_error: run.stats.lastError ?? "",
      last_success_time: run.stats.lastSuccessMs === null ? null : Math.floor(run.stats.lastSuccessMs / 1000),
      last_failure_time: run.stats.lastFailureMs === null ? null : Math.floor(run.stats.lastFailureMs / 1000),
      created_time: Math.floor(run.cfg.createdMs / 1000),
      in_flight: run.open.size,
      backlog: this.host.pushes.backlog(run.cursor.floors, now),
    }));
  }

  /**
   * PUSH.DELETE: stops the subscription (attempts in flight are aborted,
   * their answers ignored). Its group stays, at its ack floors, for pull
   * consumers: the messages it had not settled are delivered again.
   * Throws Mq9Error(push_not_found).
   */
  remove(pushId: string): void {
    const run = [...this.runs.values()].find((r) => r.cfg.pushId === pushId);
    if (!run) throw new Mq9Error("push_not_found", mq9Messages.pushNotFound());
    for (const o of run.open.values()) o.cancel?.abort();
    const floors = [...run.cursor.floors];
    const h = this.host;
    h.storage.transactionSync(() => {
      h.pushes.deletePush(run.cfg.seq);
      h.store.saveGroup(run.cfg.group, { floors, delivered: floors.map((f) => f - 1), batch: null });
    });
    this.runs.delete(run.cfg.seq);
    this.byGroup.delete(run.cfg.group);
    this.changed();
    h.telemetry.touch();
  }

  /** The mailbox is gone (its tables dropped): forget everything, abort what is in flight. */
  clear(): void {
    for (const run of this.runs.values()) for (const o of run.open.values()) o.cancel?.abort();
    this.runs.clear();
    this.byGroup.clear();
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
    const changes = this.writeDues((run) => (run.open.size < run.cfg.concurrency && (run.due === null || run.due > now) ? now : run.due));
    if (changes) this.host.rearm();
  }

  // ---------------------------------------------------------------- the alarm's loop

  /** The alarm handler starts running deliveries. */
  beginRun(): void {
    this.running = true;
    this.spent = 0;
  }

  /** True while attempts, dead-letter copies or a budget lease are in flight (the alarm handler keeps waiting). */
  get busy(): boolean {
    return this.inFlight > 0 || this.copying > 0 || this.leasing;
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

  /**
   * True when the alarm handler may return: nothing in flight and no
   * delivery activity for LINGER_MS.
   */
  done(now: number): boolean {
    return !this.busy && (now - this.activeAt >= LINGER_MS || this.spent >= this.host.subrequestsPerRun);
  }

  /** Attempts or copies that may start now: ≤ 6 connections open, ≤ the run's subrequest budget (state.ts startSlots). */
  private slots(): number {
    return startSlots({ inFlight: this.inFlight, copying: this.copying, leasing: this.leasing, spent: this.spent }, this.host.subrequestsPerRun);
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
      if (run.more && run.open.size < run.cfg.concurrency && this.throttledUntil > Date.now()) t = earliest(t, this.throttledUntil);
    }
    return t;
  }

  /** The alarm handler ends: each subscription's schedule row says when it needs the alarm next. */
  endRun(now: number): void {
    this.running = false;
    this.writeDues((run) => this.dueOf(run, now));
  }

  /** When the driver needs the alarm (for the scheduler): the earliest schedule row. */
  dueAt(): number | null {
    let t: number | null = null;
    for (const run of this.runs.values()) t = earliest(t, run.due);
    return t;
  }

  // ---------------------------------------------------------------- deliveries

  /** Starts what `run` can start now: due retries and dead-letter copies, then new messages into free slots. */
  private fill(run: Run, now: number): void {
    const meta = this.host.meta();
    if (!meta || this.runs.get(run.cfg.seq) !== run) return;
    for (const o of run.open.values()) {
      if (o.cancel || o.copying || o.row.nextMs > now) continue;
      if (this.slots() <= 0) return; // the next run (or a freed connection) takes it
      if (o.row.deadLetter) {
        this.copyToDeadLetter(run, o, meta, now);
        continue;
      }
      const m = this.host.store.message(o.row.msgId, now);
      if (!m) {
        this.settle(run, o, null); // deleted or expired meanwhile: nothing left to deliver
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
      const o: Open = {
        row: { pushSeq: run.cfg.seq, msgId: m.msgId, lane: m.lane, attempts: 0, nextMs: now, lastError: null, deadLetter: false },
        cancel: null, deadline: Infinity, copying: false, copyFailures: 0,
      };
      run.open.set(m.msgId, o);
      run.cursor = takeMessage(run.cursor, m);
      this.start(run, o, m, meta, now, true);
    }
  }

  /** Up to `n` messages the run has not taken, in FETCH order. */
  private untaken(run: Run, n: number, now: number): StoredMessage[] {
    return readBatch(nextPositions(run.cursor), n, Infinity, this.host.laneTops(), (lane, floor, max) => this.host.store.readLane(lane, floor, max, now));
  }

  private untakenBelowTops(run: Run): boolean {
    const tops = this.host.laneTops();
    return nextPositions(run.cursor).some((p, lane) => p <= tops[lane]!);
  }

  /** May an attempt of `size` bytes start now (in-flight byte budget, the tenant's attempt rate)? */
  private admit(size: number, now: number): boolean {
    if (!admitsBytes(this.inFlightBytes, size, this.host.inFlightBudgetBytes)) return false;
    if (this.tokens > 0 && now < this.tokensUntil) {
      this.tokens--;
      return true;
    }
    this.tokens = 0;
    if (now < this.throttledUntil || this.leasing || this.spent >= this.host.subrequestsPerRun) return false;
    this.leasing = true;
    this.spent++;
    this.host.leaseAttempts().then(
      (n) => {
        this.tokens = n;
        this.tokensUntil = Date.now() + LEASE_TTL_MS;
        if (n <= 0) this.throttledUntil = Date.now() + THROTTLE_MS;
      },
      () => {
        this.tokens = 1; // the tenant's object did not answer: fail open, one attempt at a time
        this.tokensUntil = Date.now() + LEASE_TTL_MS;
      },
    ).finally(() => {
      this.leasing = false;
      if (this.running) this.step(Date.now());
      this.host.kick();
    });
    return false;
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
    const body = new Uint8Array(m.payload);
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
        if (this.isOpen(run, o)) this.answered(run, o, m.size, outcome);
        this.host.kick();
      }));
  }

  private isOpen(run: Run, o: Open): boolean {
    return this.runs.get(run.cfg.seq) === run && run.open.get(o.row.msgId) === o;
  }

  /**
   * Records an attempt's outcome (inside a batch of `answers`); the run
   * starts what can start next at the end of the batch (endBatch, same
   * commit).
   */
  private answered(run: Run, o: Open, bytes: number, outcome: AttemptOutcome): void {
    const h = this.host;
    const now = Date.now();
    h.telemetry.pushAttempt(outcome.kind, bytes);
    this.answeredRuns.add(run);
    if (outcome.kind === "ok") {
      run.stats.delivered++;
      run.stats.lastSuccessMs = now;
      this.settle(run, o, { delivered: 1, successMs: now });
    } else {
      const error = describeOutcome(outcome);
      run.stats.failed++;
      run.stats.lastError = error;
      run.stats.lastFailureMs = now;
      const next = afterFailure(o.row.attempts, run.cfg.maxAttempts, outcome, now, h.backoff, h.random);
      o.row.lastError = error;
      o.row.deadLetter = next.kind === "dead_letter";
      o.row.nextMs = next.kind === "retry" ? next.atMs : now;
      h.storage.transactionSync(() => h.pushes.putOpen(o.row));
      addStats(run, { failed: 1, lastError: error, failureMs: now });
    }
  }

  /**
   * The end of a batch of answers, in its turn (before its commit): the
   * counters of each subscription are written once, the telemetry once, and
   * the subscriptions that had answers start their next attempts.
   */
  private endBatch(): void {
    const h = this.host;
    const runs = [...this.answeredRuns].filter((run) => this.runs.get(run.cfg.seq) === run);
    this.answeredRuns.clear();
    if (runs.length === 0) return; // only answers of deleted subscriptions or a purged mailbox: nothing to write
    h.storage.transactionSync(() => {
      for (const run of runs) {
        if (run.pending) h.pushes.changeStats(run.cfg.seq, run.pending);
        run.pending = null;
      }
      h.telemetry.persist();
    });
    const now = Date.now();
    for (const run of runs) this.fill(run, now);
  }

  /**
   * The message leaves the open set (acknowledged, dead-lettered or gone);
   * the group's floors follow. `change` (counters) is written at the end of
   * the batch of answers it is part of (endBatch) — non-null only there.
   */
  private settle(run: Run, o: Open, change: StatsChange | null): void {
    const h = this.host;
    run.open.delete(o.row.msgId);
    run.cursor = { floors: pushFloors(run.cursor, [...run.open.values()].map((x) => x.row)), delivered: run.cursor.delivered, batch: null };
    h.storage.transactionSync(() => {
      h.pushes.deleteOpen(run.cfg.seq, o.row.msgId);
      h.store.saveGroup(run.cfg.group, run.cursor);
    });
    if (change) addStats(run, change);
  }

  /** max_attempts are used: copies the message to `<address>.dlq`, then settles it. */
  private copyToDeadLetter(run: Run, o: Open, meta: MailboxMeta, now: number): void {
    const h = this.host;
    const m = h.store.message(o.row.msgId, now);
    if (!m) {
      this.settle(run, o, null);
      return;
    }
    const dlq = deadLetterAddress(meta.address);
    const info: DeadLetterInfo = {
      mail_address: meta.address, msg_id: m.msgId, push_id: run.cfg.pushId, group_name: run.cfg.group,
      reason: o.row.lastError ?? "", attempts: o.row.attempts, time: Math.floor(now / 1000),
    };
    const copy: DeadLetterCopy = {
      lane: m.lane, key: m.key, tags: decodeTags(m.tags), payload: new Uint8Array(m.payload),
      replyTo: m.replyTo, correlationId: m.correlationId, info,
      ref: `${meta.address}/${run.cfg.pushId}/${m.msgId}`,
    };
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
        if (this.isOpen(run, o)) {
          const at = Date.now();
          this.answeredRuns.add(run);
          if (failure === null) {
            run.stats.deadLettered++;
            h.telemetry.pushDeadLettered();
            this.settle(run, o, { deadLettered: 1 });
          } else {
            const error = `dead-letter mailbox ${dlq}: ${failure}`.slice(0, 300);
            o.copyFailures++;
            o.row.nextMs = at + backoffMs(o.copyFailures, h.backoff, h.random);
            run.stats.lastError = error;
            run.stats.lastFailureMs = at;
            h.storage.transactionSync(() => h.pushes.putOpen(o.row));
            addStats(run, { lastError: error, failureMs: at });
          }
        }
        this.host.kick();
      }));
  }

  // ---------------------------------------------------------------- schedule rows

  /** When `run` needs the alarm next (nothing in flight): its earliest retry, or now/after a throttle when it can take messages. */
  private dueOf(run: Run, now: number): number | null {
    let t: number | null = null;
    for (const o of run.open.values()) t = earliest(t, o.cancel || o.copying ? now : o.row.nextMs);
    if (run.more && run.open.size < run.cfg.concurrency) t = earliest(t, Math.max(now, this.throttledUntil));
    return t;
  }

  /** Writes the schedule rows that `due` changes (one transaction); true when any changed. */
  private writeDues(due: (run: Run) => number | null): boolean {
    const changes: [Run, number | null][] = [];
    for (const run of this.runs.values()) {
      const d = due(run);
      if (d !== run.due) changes.push([run, d]);
    }
    if (changes.length === 0) return false;
    this.host.storage.transactionSync(() => {
      for (const [run, d] of changes) this.host.pushes.setDue(run.cfg.seq, d);
    });
    for (const [run, d] of changes) run.due = d;
    return true;
  }

  /** A subscription was added or removed: the running loop looks again, or the alarm is re-armed. */
  private changed(): void {
    if (this.running) this.host.kick();
    else this.host.rearm();
  }
}

/** Adds `c` to the counter changes `run` writes at the end of the current batch of answers. */
function addStats(run: Run, c: StatsChange): void {
  const p = (run.pending ??= {});
  if (c.delivered) p.delivered = (p.delivered ?? 0) + c.delivered;
  if (c.failed) p.failed = (p.failed ?? 0) + c.failed;
  if (c.deadLettered) p.deadLettered = (p.deadLettered ?? 0) + c.deadLettered;
  if (c.lastError !== undefined) p.lastError = c.lastError;
  if (c.successMs !== undefined) p.successMs = c.successMs;
  if (c.failureMs !== undefined) p.failureMs = c.failureMs;
}

/**
 * Why the endpoint rules refuse `url` now (the Mq9Error's text, `push url
 * "…" refused: <rule>`), or null when they allow it: a subscription stored
 * under a looser policy (PUSH_ALLOW_LOOPBACK since unset, a narrower
 * PUSH_ALLOWED_HOSTS) sends nothing to a host the vars refuse.
 */
function refusedByPolicy(url: string, policy: PushUrlPolicy): string | null {
  try {
    checkPushUrl(url, policy);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}
