/**
 * What the push driver (driver.ts) needs from its Mailbox: storage, the
 * stores, the telemetry, the configuration (push-config.ts) and callbacks
 * into the mailbox and its alarm (shared/scheduler.ts).
 */
import type { PushUrlPolicy } from "../../../wire/mq9";
import type { MailboxResult } from "../rpc";
import type { MailboxMeta, MailboxStore } from "../store";
import type { MailboxTelemetry } from "../telemetry";
import type { BackoffPolicy } from "./state";
import type { PushStore } from "./store";
import type { DeadLetterCopy } from "./dead-letter";

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
