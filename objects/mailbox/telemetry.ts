/**
 * What a Mailbox counts for /metrics and usage metering (objects/usage/,
 * docs/operations.md): messages stored by SEND and returned by FETCH /
 * QUERY and sent by push attempts with their payload bytes, push attempt
 * outcomes and dead letters, and levels read at flush time (the mailbox
 * exists, held long-poll FETCHes, stored payload bytes, push subscriptions,
 * their attempts in flight and backlog). Counts stay in memory until the
 * next report (≤ one flush interval; the Meter writes no row per message or
 * per commit, issue #26 (g)); the flush shares the mailbox's one alarm.
 */
import type { Env } from "../env";
import { series } from "../usage/catalog";
import { Meter } from "../usage/meter";
import { telemetryFlushMs, tenantOfName, usageStub } from "../usage/stub";
import { OUTCOME_LABELS, type OutcomeLabel } from "./push/state";

const SENT = series("mortarmq_mq9_messages_sent_total");
const SENT_BYTES = series("mortarmq_mq9_sent_bytes_total");
type Verb = "fetch" | "query" | "push";
const VERBS: readonly Verb[] = ["fetch", "query", "push"];
const RETURNED = Object.fromEntries(VERBS.map((verb) => [verb, series("mortarmq_mq9_messages_returned_total", { verb })])) as Record<Verb, string>;
const RETURNED_BYTES = Object.fromEntries(VERBS.map((verb) => [verb, series("mortarmq_mq9_returned_bytes_total", { verb })])) as Record<Verb, string>;
const PUSH_ATTEMPTS = Object.fromEntries(OUTCOME_LABELS.map((outcome) => [outcome, series("mortarmq_push_attempts_total", { outcome })])) as Record<OutcomeLabel, string>;
const PUSH_DEAD = series("mortarmq_push_dead_lettered_total");
const PUSHES = series("mortarmq_push_subscriptions");
const PUSH_IN_FLIGHT = series("mortarmq_push_in_flight");
const PUSH_BACKLOG = series("mortarmq_push_backlog");
const MAILBOXES = series("mortarmq_mq9_mailboxes");
const WAITING = series("mortarmq_long_polls_waiting", { kind: "mq9_fetch" });
const STORED = series("mortarmq_stored_bytes", { system: "mq9" });

/** Levels of one mailbox, read at flush time. */
export interface MailboxLevels {
  exists: boolean;
  heldFetches: number;
  storedBytes: number;
  /** Push subscriptions, their attempts waiting for an answer, and their unacknowledged messages (summed). */
  pushes: number;
  pushInFlight: number;
  pushBacklog: number;
}

/** What the telemetry needs from its Mailbox. */
export interface MailboxTelemetryHost {
  storage: DurableObjectStorage;
  env: Env;
  /** This object's id (hex). */
  reporter: string;
  /** The object's name (`mailbox/<tenant>/<address>`); without one nothing is reported. */
  name: string | undefined;
  levels(): MailboxLevels;
  /** Arms the mailbox's alarm for a flush at `at` ms. */
  schedule(at: number): void;
}

export class MailboxTelemetry {
  private readonly meter: Meter | null;

  constructor(host: MailboxTelemetryHost) {
    const tenant = tenantOfName(host.name);
    this.meter = tenant === null ? null : new Meter(host.storage, {
      reporter: host.reporter,
      flushMs: telemetryFlushMs(host.env),
      send: (r) => usageStub(host.env, tenant).report(r),
      levels: () => {
        const l = host.levels();
        return {
          [MAILBOXES]: l.exists ? 1 : 0, [WAITING]: l.heldFetches, [STORED]: l.storedBytes,
          [PUSHES]: l.pushes, [PUSH_IN_FLIGHT]: l.pushInFlight, [PUSH_BACKLOG]: l.pushBacklog,
        };
      },
      // WAITING is not: long-polls parked on sockets (wait-sockets.ts) outlive a restart; resume() checks it
      memoryLevels: [PUSH_IN_FLIGHT],
      schedule: (at) => host.schedule(at),
    });
  }

  /**
   * Asks for a flush if something was left unreported before a restart
   * (call once loaded), or if long-polls wait now (`held`: parked sockets)
   * while the last report said none ({@link held}).
   */
  resume(held: number): void {
    this.meter?.resume();
    this.held(held);
  }

  /**
   * `n` long-poll FETCHes wait now. A flush is asked for only when some
   * wait and the last report said none (a consumer started waiting on this
   * mailbox); any other change of the level (one more or one fewer waiting,
   * none left) is reported with the mailbox's next report, whatever asks
   * for it (a SEND, a FETCH that returns messages, expiry, …). A consumer
   * long-polling an idle mailbox closes its parked socket and opens the next
   * one every poll, usually on a freshly rebuilt object: reporting each of
   * those changes cost an alarm write per empty poll and a report a minute
   * (issue #26 §2 (f): an empty poll writes no row). The price: when the
   * last consumer stops polling an idle mailbox, the gauge keeps its last
   * reported value until the mailbox's next report.
   */
  held(n: number): void {
    if (this.meter && n > 0 && this.meter.reportedLevel(WAITING) === 0) this.meter.touch();
  }

  /** SENDs stored `count` messages (default 1) of `bytes` payload bytes in all (memory, until the next report). */
  sent(bytes: number, count = 1): void {
    const now = Date.now();
    this.meter?.add(SENT, count, now);
    this.meter?.add(SENT_BYTES, bytes, now);
  }

  /** FETCH or QUERY returned, or a push attempt sent, `count` messages of `bytes` payload bytes (memory, until the next report). */
  returned(verb: Verb, count: number, bytes: number): void {
    if (count === 0) return;
    const now = Date.now();
    this.meter?.add(RETURNED[verb], count, now);
    this.meter?.add(RETURNED_BYTES[verb], bytes, now);
  }

  /** A push attempt of `bytes` payload bytes ended with `outcome` (memory, until the next report). */
  pushAttempt(outcome: OutcomeLabel, bytes: number): void {
    this.meter?.add(PUSH_ATTEMPTS[outcome], 1);
    this.returned("push", 1, bytes);
  }

  /** A pushed message was copied to the dead-letter mailbox (memory, until the next report). */
  pushDeadLettered(): void {
    this.meter?.add(PUSH_DEAD, 1);
  }

  /** A level changed (long-poll held or answered, messages removed): reported within the flush interval. */
  touch(): void {
    this.meter?.touch();
  }

  /**
   * The mailbox is gone (TTL expiry): reported at once (Meter.touchNow), so
   * the tenant's mailbox gauge sees it promptly.
   */
  existenceChanged(): void {
    this.meter?.touchNow();
  }

  /**
   * The mailbox was just stored here, in this synchronous turn (its first
   * use took over its index row, Mailbox.adopt): its report (mailbox gauge
   * +1) is built now, so it commits with that turn, and sent right after
   * (Meter.reportNow) — no alarm and no commit of its own. Resolves true
   * once the tenant's aggregator has it; null when nothing was sent now (a
   * flush was asked for instead).
   */
  created(): Promise<boolean> | null {
    return this.meter?.reportNow() ?? null;
  }

  /** The mailbox's storage is being deleted by a tenant purge: nothing counted so far is reported (Meter.abandon). */
  async abandon(): Promise<void> {
    await this.meter?.abandon();
  }

  /**
   * Reports to the tenant's aggregator (the alarm calls this when the flush
   * is due; PUSH.CREATE / PUSH.DELETE at once, so the tenant's push
   * subscription count sees the change). True when everything is reported
   * (false: the send failed and a retry is scheduled, or there is no meter).
   */
  async flush(): Promise<boolean> {
    return (await this.meter?.flush()) ?? false;
  }
}
