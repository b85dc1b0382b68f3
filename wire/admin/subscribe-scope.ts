/**
 * NATS SUB under token scopes (docs/tenants.md "Permissions"; decision in
 * scopes.ts): a scoped token may only subscribe to subjects it may receive.
 * Pure.
 *
 * What a NATS connection of this broker can receive on a subject in the mq9
 * namespace (`$mq9.AI.…`) is the traffic of the mailboxes the subject names
 * — on nats-server with an mq9 service, another client's SENDs — so a SUB
 * needs `mq9.fetch` on every mailbox its subject can match:
 * - `$mq9.AI.MSG.<verb>.<m>`, `$mq9.AI.PUSH.<verb>.<m>`,
 *   `$mq9.AI.A2A.RECEIVER.<verb>.<m>` with a literal verb: the mailbox
 *   pattern `<m>` (for MSG.DELETE without the msg_id token);
 * - any other subject that can match an mq9 subject (`>`, `$mq9.>`,
 *   `$mq9.AI.*.SEND.x`, `$mq9.AI.AGENT.REGISTER`, …): every mailbox.
 * Subjects that cannot match `$mq9.AI.>` (`_INBOX.>`, the tenant's own
 * subjects) carry no broker data and stay open.
 *
 * A scope allows the SUB when its operation covers `mq9.fetch` and its name
 * pattern covers every mailbox the subject's pattern matches (group
 * patterns are ignored: any group of a mailbox sees all its messages); a
 * deny refuses it when its name pattern can match any of them and it names
 * no group. Deny wins; no scopes = allowed.
 */
import { opMatches, type Decision, type Scopes } from "./scopes";

const MQ9: readonly string[] = ["$mq9", "AI", ">"];
const ANY: readonly string[] = [">"];
const ALLOWED: Decision = Object.freeze({ allowed: true });

const wild = (t: string | undefined) => t === "*" || t === ">";

/** True when some literal subject matches both patterns (token arrays, NATS rules). */
export function patternsIntersect(a: readonly string[], b: readonly string[]): boolean {
  for (let i = 0; ; i++) {
    const x = a[i];
    const y = b[i];
    if (x === ">") return y !== undefined;
    if (y === ">") return x !== undefined;
    if (x === undefined || y === undefined) return x === y;
    if (x !== "*" && y !== "*" && x !== y) return false;
  }
}

/** True when every literal subject matching `inner` also matches `outer`. */
export function patternCovers(outer: readonly string[], inner: readonly string[]): boolean {
  for (let i = 0; ; i++) {
    const o = outer[i];
    const n = inner[i];
    if (o === ">") return n !== undefined;
    if (o === undefined || n === undefined) return o === n;
    if (n === ">") return false;
    if (o !== "*" && (n === "*" || o !== n)) return false;
  }
}

/**
 * The mailbox pattern (tokens) a SUB `subject` can receive traffic of:
 * null when it cannot match an mq9 subject, `[">"]` when it may reach any.
 */
export function subscribedMailboxes(subject: string): readonly string[] | null {
  const t = subject.split(".");
  if (!patternsIntersect(t, MQ9)) return null;
  if (t[0] !== "$mq9" || t[1] !== "AI") return ANY;
  let at = -1;
  if ((t[2] === "MSG" || t[2] === "PUSH") && !wild(t[3])) at = 4;
  else if (t[2] === "A2A" && t[3] === "RECEIVER" && !wild(t[4])) at = 5;
  if (at < 0 || t.length <= at) return ANY;
  const rest = t.slice(at);
  // MSG.DELETE.<mailbox>.<msg_id>: the last token is the message, not part of the mailbox
  return t[2] === "MSG" && t[3] === "DELETE" && rest.length > 1 && rest[rest.length - 1] !== ">" ? rest.slice(0, -1) : rest;
}

/**
 * May a token with `scopes` subscribe to `subject` (a valid NATS subject,
 * wildcards allowed)? The refusal's `reason` names `mq9.fetch`, the subject
 * and the scope (for the audit log; the client gets nats-server's text).
 */
export function decideSubscribe(scopes: Scopes | null | undefined, subject: string): Decision {
  if (!scopes || (scopes.allow.length === 0 && scopes.deny.length === 0)) return ALLOWED;
  const m = subscribedMailboxes(subject);
  if (m === null) return ALLOWED;
  const what = `mq9.fetch on the mailboxes of SUB "${subject}"`;
  for (const d of scopes.deny) {
    if (d.group === null && opMatches(d.op, "mq9.fetch") && (d.name === null || patternsIntersect(d.name, m))) {
      return { allowed: false, reason: `permission denied: ${what} (denied by "${d.text}")` };
    }
  }
  if (scopes.allow.length === 0) return ALLOWED;
  for (const a of scopes.allow) if (opMatches(a.op, "mq9.fetch") && (a.name === null || patternCovers(a.name, m))) return ALLOWED;
  return { allowed: false, reason: `permission denied: ${what} (no scope of the token allows it)` };
}
