/**
 * The Mailbox's settings from Worker vars, read once per object
 * (docs/push.md "Limits and settings"; the parsing of each var is in
 * shared/push-config.ts, which the TenantDirectory shares).
 */
import type { PushUrlPolicy } from "../../wire/mq9";
import type { Env } from "../env";
import { PUSH_IN_FLIGHT_BUDGET_BYTES, pushAttemptsPerS, pushBackoff, pushPolicy, pushSubrequestsPerRun } from "../shared/push-config";
import type { BackoffPolicy } from "./push/state";

/** What a Mailbox's push delivery is configured with. */
export interface MailboxConfig {
  /** Retry schedule after a failed attempt (PUSH_BACKOFF_BASE_MS, PUSH_BACKOFF_MAX_MS). */
  backoff: BackoffPolicy;
  /** Endpoint rules (PUSH_ALLOW_LOOPBACK, PUSH_ALLOWED_HOSTS). */
  urlPolicy: PushUrlPolicy;
  /** Payload bytes in flight per mailbox. */
  inFlightBudgetBytes: number;
  /** Subrequests one alarm run starts at most (PUSH_SUBREQUESTS_PER_RUN). */
  subrequestsPerRun: number;
  /** Attempts leased from the tenant at a time: a tenth of a second's worth of PUSH_MAX_ATTEMPTS_PER_S, at least 1. */
  attemptsPerLease: number;
}

/** The Mailbox's settings from `env`; unset or invalid vars give the defaults. */
export function readMailboxConfig(env: Env): MailboxConfig {
  return {
    backoff: pushBackoff(env),
    urlPolicy: pushPolicy(env),
    inFlightBudgetBytes: PUSH_IN_FLIGHT_BUDGET_BYTES,
    subrequestsPerRun: pushSubrequestsPerRun(env),
    attemptsPerLease: Math.max(1, Math.ceil(pushAttemptsPerS(env) / 10)),
  };
}
