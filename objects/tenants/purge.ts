/**
 * A deleted tenant's purge (docs/tenants.md "Deleting a tenant"), the pure
 * part: its phases in order, the state the TenantDirectory stores after
 * every step, and the progress document `GET /admin/tenants/:id` shows.
 *
 * Phases: `waiting` (until the tenant's open connections have closed and
 * their last calls landed: TENANT_PURGE_DELAY_MS after the delete) →
 * `topics` (consumer groups, then the partitions of every topic and `.dlq`
 * twin, page by page from the TopicRegistry) → `mailboxes` (page by page
 * from the MailboxIndex) → `agents` → `registry` → `mailbox-index` →
 * `usage` (its aggregator, and its row in the usage index) → `done`. The
 * usage aggregator goes last: every purged object first abandons what it had
 * not reported. Each step is one alarm run, bounded (one page of at most
 * PURGE_PAGE objects), and idempotent — the state moves on only after the
 * step's calls succeeded, so a step interrupted by a crash is simply run
 * again.
 */
import type { PurgeDoc } from "../../wire/admin/tenants";

export const PURGE_PHASES = ["waiting", "topics", "mailboxes", "agents", "registry", "mailbox-index", "usage", "done"] as const;
export type PurgePhase = (typeof PURGE_PHASES)[number];

/** Objects purged per step (one alarm run). */
export const PURGE_PAGE = 32;

/** What the TenantDirectory stores (meta row `purge`, JSON). */
export interface PurgeState {
  phase: PurgePhase;
  /** When the tenant was deleted, unix ms. */
  requestedAt: number;
  /** The first step runs no earlier than this, unix ms. */
  startAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** Position inside the current phase (registry or mailbox-index cursor). */
  cursor: string | null;
  purged: { groups: number; partitions: number; mailboxes: number };
  /** Estimated objects to purge, read when the work starts. */
  estimated: { groups: number; partitions: number; mailboxes: number } | null;
  /** Steps run (successful alarm runs). */
  steps: number;
  /** The last failed step's error (the step is retried); null after a success. */
  lastError: string | null;
  /** Consecutive failed attempts of the current step. */
  failures: number;
}

/** The state of a purge requested at `now`, starting `delayMs` later. */
export function newPurge(now: number, delayMs: number): PurgeState {
  return {
    phase: "waiting", requestedAt: now, startAt: now + delayMs, startedAt: null, finishedAt: null, cursor: null,
    purged: { groups: 0, partitions: 0, mailboxes: 0 }, estimated: null, steps: 0, lastError: null, failures: 0,
  };
}

/** The phase after `p`. */
export function nextPhase(p: PurgePhase): PurgePhase {
  return PURGE_PHASES[Math.min(PURGE_PHASES.length - 1, PURGE_PHASES.indexOf(p) + 1)]!;
}

/** When the next step should run: its start time while waiting, at once after a success, with backoff after failures. */
export function nextStepAt(s: PurgeState, now: number): number | null {
  if (s.phase === "done") return null;
  if (s.phase === "waiting") return Math.max(now, s.startAt);
  return s.failures === 0 ? now : now + Math.min(30_000, 500 * 2 ** (s.failures - 1));
}

/** The progress document of `GET /admin/tenants/:id` (`purge`). */
export function purgeDoc(s: PurgeState, now: number): PurgeDoc {
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return {
    state: s.phase === "done" ? "done" : s.phase === "waiting" ? "waiting" : "running",
    phase: s.phase,
    requested_at: iso(s.requestedAt)!,
    started_at: iso(s.startedAt),
    finished_at: iso(s.finishedAt),
    next_step_at: iso(nextStepAt(s, now)),
    purged: { ...s.purged },
    estimated: s.estimated ? { ...s.estimated } : null,
    steps: s.steps,
    last_error: s.lastError,
  };
}
