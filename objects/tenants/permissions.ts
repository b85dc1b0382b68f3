/**
 * Enforcing token scopes (docs/tenants.md "Permissions"; wire/admin/scopes.ts
 * decides). Every transport holds the caller's {@link Permit} — what
 * authentication returned (the tenant, the issued token's id, its parsed
 * scopes) — and asks {@link permit} before an operation: in memory, no
 * object request. A refusal is logged with the token id (never the secret)
 * and counted for `/metrics` (`mortarmq_permission_denied_total`).
 */
import { decide, scopeMatches, type Operation, type Resource, type Scopes } from "../../wire/admin/scopes";
import { decideSubscribe } from "../../wire/admin/subscribe-scope";
import { series } from "../usage/catalog";

/**
 * Who is asking: the tenant, the issued token's id (absent: static token or
 * open broker), its scopes (absent: full access), and where a refusal is
 * counted (`count(series)`: the session's or isolate's telemetry).
 */
export interface Permit {
  tenant: string;
  tokenId?: string;
  scopes?: Scopes;
  count?: (series: string) => void;
}

const deniedSeries = new Map<string, string>();

/** The `mortarmq_permission_denied_total` series of `op`. */
export function deniedSeriesOf(op: Operation): string {
  let s = deniedSeries.get(op);
  if (s === undefined) deniedSeries.set(op, (s = series("mortarmq_permission_denied_total", { operation: op })));
  return s;
}

/**
 * May `who` perform `op` on `r`? Null = yes; else the refusal text
 * (`permission denied: <op> on <resource> (…)`), already logged and counted
 * (not when `quiet`: the caller only asks, e.g. whether a DECLARE may create).
 * Without scopes this is one property read.
 */
export function permit(who: Permit, op: Operation, r: Resource | null, quiet = false): string | null {
  if (!who.scopes) return null;
  const d = decide(who.scopes, op, r);
  if (d.allowed) return null;
  if (quiet) return d.reason;
  who.count?.(deniedSeriesOf(op));
  console.warn(`mortarmq: ${d.reason} — tenant ${who.tenant}, token ${who.tokenId ?? "(static)"}`);
  return d.reason;
}

/**
 * May `who` perform any of `ops` on the topic or mailbox `name`, on some
 * group (a group pattern of a scope does not narrow it)? For a plain
 * DECLARE, which a publisher or consumer needs to learn a topic's id. Null
 * = yes; else the refusal of `ops[0]` on `name` (logged and counted once).
 */
export function permitAny(who: Permit, ops: readonly Operation[], name: string): string | null {
  const s = who.scopes;
  if (!s) return null;
  const r = { name };
  const covers = (x: Scopes["allow"][number], op: Operation) => scopeMatches({ ...x, group: null }, op, r);
  for (const op of ops) {
    if (s.deny.some((d) => d.group === null && scopeMatches(d, op, r))) continue;
    if (s.allow.length === 0 || s.allow.some((a) => covers(a, op))) return null;
  }
  return permit(who, ops[0]!, r) ?? `permission denied: ${ops[0]} on ${name}`;
}

/**
 * May `who` subscribe (NATS SUB) to `subject` (wire/admin/subscribe-scope.ts:
 * only to subjects it may receive)? Null = yes; else the refusal text,
 * logged and counted as `mq9.fetch`.
 */
export function permitSubscribe(who: Permit, subject: string): string | null {
  if (!who.scopes) return null;
  const d = decideSubscribe(who.scopes, subject);
  if (d.allowed) return null;
  who.count?.(deniedSeriesOf("mq9.fetch"));
  console.warn(`mortarmq: ${d.reason} — tenant ${who.tenant}, token ${who.tokenId ?? "(static)"}`);
  return d.reason;
}
