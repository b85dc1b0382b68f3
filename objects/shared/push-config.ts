/**
 * Push delivery settings of a deployment (docs/push.md "Limits and
 * settings"), from Worker vars; read by the Mailbox (push/driver.ts) and
 * the TenantDirectory (per-tenant limits). Every var is optional; an empty,
 * non-numeric or non-positive number means the default.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | PUSH_ALLOW_LOOPBACK | unset | `1`: endpoints on loopback hosts (http:// or https://) are allowed (`mortarmq dev` sets it) |
 * | PUSH_ALLOWED_HOSTS | unset | comma list of hosts (`*.example.com` for subdomains) endpoints must be on |
 * | PUSH_BACKOFF_BASE_MS | 1000 | wait after the first failed attempt (doubling, jittered) |
 * | PUSH_BACKOFF_MAX_MS | 600000 | longest wait between attempts |
 * | PUSH_MAX_SUBSCRIPTIONS | 100 | push subscriptions per tenant |
 * | PUSH_MAX_ATTEMPTS_PER_S | 1000 | push attempts per second per tenant (all its mailboxes) |
 * | PUSH_SUBREQUESTS_PER_RUN | 500 | attempts, dead-letter copies and budget leases one Mailbox alarm invocation starts at most (≤ 1000, Cloudflare's subrequest limit); the rest waits for the next run |
 */
import { DEFAULT_PUSH_BACKOFF, pushUrlPolicy, type PushBackoff, type PushUrlPolicy } from "../../wire/mq9";
import type { Env } from "../env";
import { positiveInt } from "./int-var";

/** Push subscriptions a tenant may have by default. */
export const DEFAULT_PUSH_MAX_SUBSCRIPTIONS = 100;
/** Push attempts per second a tenant may make by default. */
export const DEFAULT_PUSH_MAX_ATTEMPTS_PER_S = 1000;
/**
 * Payload bytes of the attempts one mailbox has in flight at most (over
 * all its subscriptions); the first attempt is always admitted.
 */
export const PUSH_IN_FLIGHT_BUDGET_BYTES = 16 * 1024 * 1024;

/** Subrequests one push run starts by default (well under Cloudflare's 1,000 per invocation: the alarm's other calls need room). */
export const DEFAULT_PUSH_SUBREQUESTS_PER_RUN = 500;
/** The most a deployment may set: Cloudflare's subrequest limit per invocation. */
export const MAX_PUSH_SUBREQUESTS_PER_RUN = 1000;

/** Subrequests per push run (PUSH_SUBREQUESTS_PER_RUN, at most MAX_PUSH_SUBREQUESTS_PER_RUN). */
export function pushSubrequestsPerRun(env: Env): number {
  return Math.min(MAX_PUSH_SUBREQUESTS_PER_RUN, positiveInt(env.PUSH_SUBREQUESTS_PER_RUN, DEFAULT_PUSH_SUBREQUESTS_PER_RUN));
}

/** The endpoint URL policy (PUSH_ALLOW_LOOPBACK, PUSH_ALLOWED_HOSTS). */
export function pushPolicy(env: Env): PushUrlPolicy {
  return pushUrlPolicy(env.PUSH_ALLOW_LOOPBACK, env.PUSH_ALLOWED_HOSTS);
}

/** The backoff schedule (PUSH_BACKOFF_BASE_MS, PUSH_BACKOFF_MAX_MS). */
export function pushBackoff(env: Env): PushBackoff {
  const baseMs = positiveInt(env.PUSH_BACKOFF_BASE_MS, DEFAULT_PUSH_BACKOFF.baseMs);
  return { baseMs, maxMs: Math.max(baseMs, positiveInt(env.PUSH_BACKOFF_MAX_MS, DEFAULT_PUSH_BACKOFF.maxMs)) };
}

/** Push subscriptions per tenant (PUSH_MAX_SUBSCRIPTIONS). */
export function pushMaxSubscriptions(env: Env): number {
  return positiveInt(env.PUSH_MAX_SUBSCRIPTIONS, DEFAULT_PUSH_MAX_SUBSCRIPTIONS);
}

/** Push attempts per second per tenant (PUSH_MAX_ATTEMPTS_PER_S). */
export function pushAttemptsPerS(env: Env): number {
  return positiveInt(env.PUSH_MAX_ATTEMPTS_PER_S, DEFAULT_PUSH_MAX_ATTEMPTS_PER_S);
}
