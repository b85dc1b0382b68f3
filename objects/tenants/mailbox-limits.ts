/**
 * The per-tenant limits on mq9 mailboxes (docs/tenants.md "Default
 * limits"), pure: how many may exist and how fast they may be created.
 * They apply to every tenant — open broker, static tokens, directory
 * tenants — because each mailbox is a Durable Object: locally all of them
 * share one workerd process, whose SQLite heap (512 MiB for all objects)
 * and memory a flood of CREATEs would exhaust for every tenant (#14 item 3).
 *
 * Effective limit = the tenant's quota if set (`mailboxes`,
 * `mailbox_creates_per_s`), else the Worker var, else the built-in default.
 */
import type { Quotas } from "../../wire/admin/tenants";
import { positiveInt } from "../shared/int-var";

/**
 * Built-in mailbox CREATEs per second per tenant. A CREATE writes only the
 * mailbox's row in the tenant's MailboxIndex (docs/mq9.md "Mailbox index":
 * ~1 fsync, ~2 ms of workerd's thread locally), but each mailbox opens its
 * own database on its first use (~13 fsyncs, ~330 KiB in memory until
 * evicted ~10 s later), so the rate still bounds how fast a tenant can make
 * the broker open databases: 20/s keeps ~200 of them in memory — under
 * 40 MiB of workerd's 512 MiB SQLite heap (bench `mailbox-flood`,
 * docs/operations.md "Under a flood").
 */
export const DEFAULT_MAILBOX_CREATES_PER_S = 20;
/** A tenant's creation bucket holds this many seconds of its rate (200 CREATEs at the default rate). */
export const CREATE_BURST_S = 10;
/** Built-in mailboxes per tenant (each is a SQLite database of ~50–60 KB on disk when empty). */
export const DEFAULT_MAILBOXES_PER_TENANT = 10_000;

/** A tenant's mailbox limits in force. */
export interface MailboxLimits {
  /** CREATEs per second (sustained); bursts of CREATE_BURST_S seconds of it. */
  createsPerS: number;
  /** Mailboxes that may exist. */
  maxMailboxes: number;
}

/** Worker vars that change the defaults (wrangler.toml). */
export interface MailboxLimitVars {
  MQ9_MAILBOX_CREATES_PER_S?: string;
  MQ9_MAILBOXES_PER_TENANT?: string;
}

/** The limits of a tenant with quotas `q` under the deployment's vars. */
export function mailboxLimits(vars: MailboxLimitVars, q: Pick<Quotas, "mailboxes" | "mailbox_creates_per_s">): MailboxLimits {
  return {
    createsPerS: q.mailbox_creates_per_s ?? positiveInt(vars.MQ9_MAILBOX_CREATES_PER_S, DEFAULT_MAILBOX_CREATES_PER_S),
    maxMailboxes: q.mailboxes ?? positiveInt(vars.MQ9_MAILBOXES_PER_TENANT, DEFAULT_MAILBOXES_PER_TENANT),
  };
}
