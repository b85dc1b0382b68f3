/**
 * Token scopes (DESIGN.md §8 "scoped tokens"; docs/tenants.md
 * "Permissions"): which operations on which topics, groups and mailboxes a
 * token may perform inside its tenant. Pure: parsing and the one decision
 * function every transport uses.
 *
 * A scope is `<operation>` or `<operation>:<resource>`:
 * - operation: one of {@link OPERATIONS}, `<family>.*` (`mq9.*`, `mortar.*`,
 *   `agents.*`, `usage.*`) or `*` (every operation);
 * - resource: a NATS-style pattern over the dot-separated name — `*` matches
 *   exactly one token, `>` one or more trailing tokens; absent = any. For
 *   operations on a group (`mortar.consume`, `mortar.admin`, `mq9.fetch`,
 *   `mq9.ack`) the resource may add `/<group pattern>` after the topic or
 *   mailbox pattern (split at the last `/`; absent = any group).
 *
 * Decision ({@link decide}): no scopes at all = full tenant access (tokens
 * from before scopes keep working); a matching deny refuses whatever allows
 * match (deny wins); with allow rules, something must match one; with deny
 * rules only, everything not denied is allowed.
 */

/** Every operation a scope can name, with what its resource is. */
export const OPERATIONS = {
  "mortar.publish": "topic",
  "mortar.consume": "topic/group",
  "mortar.admin": "topic/group",
  "mq9.create": "mailbox",
  "mq9.send": "mailbox",
  "mq9.fetch": "mailbox/group",
  "mq9.ack": "mailbox/group",
  "mq9.query": "mailbox",
  "mq9.delete": "mailbox",
  "mq9.push": "mailbox",
  "agents.register": "mailbox",
  "agents.discover": "none",
  "usage.read": "none",
} as const;

/** A named operation. */
export type Operation = keyof typeof OPERATIONS;

/** The resource an operation acts on: a topic or mailbox name, and the group when it has one. */
export interface Resource {
  name: string;
  group?: string;
}

/** One parsed scope. */
export interface Scope {
  /** The scope as written (shown by `tokens list`, named in refusals). */
  text: string;
  /** Operation pattern: an operation, `family.*` or `*`. */
  op: string;
  /** Name pattern tokens (dot-split); null = any. */
  name: string[] | null;
  /** Group pattern tokens; null = any. */
  group: string[] | null;
}

/** A token's scopes. Both empty = full access. */
export interface Scopes {
  allow: Scope[];
  deny: Scope[];
}

/** Most scopes a token may carry (allow + deny). */
export const MAX_SCOPES = 64;
/** Longest scope text, characters. */
export const MAX_SCOPE_CHARS = 512;

const FAMILIES = new Set(Object.keys(OPERATIONS).map((o) => o.slice(0, o.indexOf("."))));

/** Thrown by {@link parseScope} for a scope that does not parse; the message says why. */
export class ScopeError extends Error {
  override name = "ScopeError";
}

function patternTokens(p: string, what: string, text: string): string[] {
  const tokens = p.split(".");
  tokens.forEach((t, i) => {
    if (t === "") throw new ScopeError(`scope "${text}": empty token in the ${what} pattern "${p}"`);
    if (t === ">" && i !== tokens.length - 1) throw new ScopeError(`scope "${text}": ">" must be the last token of the ${what} pattern`);
    if (t !== "*" && t !== ">" && /[*>]/.test(t)) throw new ScopeError(`scope "${text}": "*" and ">" stand for whole tokens ("${t}")`);
  });
  return tokens;
}

/**
 * Parses one scope (see the module comment).
 * @throws ScopeError naming the scope and what is wrong with it.
 */
export function parseScope(text: string): Scope {
  const s = text.trim();
  if (s === "") throw new ScopeError("a scope must not be empty");
  if (s.length > MAX_SCOPE_CHARS) throw new ScopeError(`scope "${s.slice(0, 40)}…" is longer than ${MAX_SCOPE_CHARS} characters`);
  const colon = s.indexOf(":");
  const op = colon < 0 ? s : s.slice(0, colon);
  const res = colon < 0 ? "" : s.slice(colon + 1);
  const known = op === "*" || op in OPERATIONS || (op.endsWith(".*") && FAMILIES.has(op.slice(0, -2)));
  if (!known) throw new ScopeError(`scope "${s}": unknown operation "${op}" (one of ${Object.keys(OPERATIONS).join(", ")}, a family like mq9.*, or *)`);
  if (colon >= 0 && res === "") throw new ScopeError(`scope "${s}": empty resource after ":" (leave out ":" for any)`);
  if (res === "") return { text: s, op, name: null, group: null };
  const kind = op in OPERATIONS ? OPERATIONS[op as Operation] : "any";
  if (kind === "none") throw new ScopeError(`scope "${s}": ${op} acts on no topic or mailbox; write it without a resource`);
  const hasGroup = kind === "topic/group" || kind === "mailbox/group" || kind === "any";
  const slash = hasGroup ? res.lastIndexOf("/") : -1;
  const name = slash < 0 ? res : res.slice(0, slash);
  const group = slash < 0 ? null : res.slice(slash + 1);
  if (name === "" || group === "") throw new ScopeError(`scope "${s}": empty ${name === "" ? "name" : "group"} pattern`);
  return { text: s, op, name: patternTokens(name, "name", s), group: group === null ? null : patternTokens(group, "group", s) };
}

/**
 * Parses a token's allow and deny lists.
 * @throws ScopeError for the first scope that does not parse, or more than MAX_SCOPES.
 */
export function parseScopes(allow: readonly string[] = [], deny: readonly string[] = []): Scopes {
  if (allow.length + deny.length > MAX_SCOPES) throw new ScopeError(`a token carries at most ${MAX_SCOPES} scopes (${allow.length + deny.length} given)`);
  return { allow: allow.map(parseScope), deny: deny.map(parseScope) };
}

/** True when `pattern` (tokens) matches the dot-separated `name`. */
export function matchPattern(pattern: readonly string[], name: string): boolean {
  const tokens = name.split(".");
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p === ">") return tokens.length > i;
    if (i >= tokens.length) return false;
    if (p !== "*" && p !== tokens[i]) return false;
  }
  return tokens.length === pattern.length;
}

/** True when the operation pattern of a scope (`op`, `family.*`, `*`) covers `op`. */
export function opMatches(pattern: string, op: Operation): boolean {
  return pattern === "*" || pattern === op || (pattern.endsWith(".*") && op.startsWith(pattern.slice(0, -1)));
}

/** True when scope `s` covers `op` on `r`. */
export function scopeMatches(s: Scope, op: Operation, r: Resource | null): boolean {
  if (!opMatches(s.op, op)) return false;
  if (s.name === null) return true; // no resource pattern: any resource, or none
  if (r === null) return false; // a named pattern never covers an operation without a resource
  if (!matchPattern(s.name, r.name)) return false;
  if (s.group === null) return true;
  return r.group !== undefined && matchPattern(s.group, r.group);
}

/** The outcome of {@link decide}. */
export type Decision =
  | { allowed: true }
  /** `reason`: for the refusal text and the audit log (no secret in it). */
  | { allowed: false; reason: string };

const ALLOWED: Decision = Object.freeze({ allowed: true });

/** How a resource is named in refusals: `orders`, `orders/billing`. */
export function describeResource(r: Resource | null): string {
  if (r === null) return "";
  return r.group === undefined ? r.name : `${r.name}/${r.group}`;
}

/**
 * May a token with `scopes` perform `op` on `r`? (`r` null: an operation on
 * no resource, or a name not known yet — a CREATE without a name — which
 * only a scope without a name pattern covers.) Null or empty scopes = yes.
 */
export function decide(scopes: Scopes | null | undefined, op: Operation, r: Resource | null): Decision {
  if (!scopes || (scopes.allow.length === 0 && scopes.deny.length === 0)) return ALLOWED;
  // every message of a connection asks the same few questions: answered from a small per-Scopes memo
  let memo = decisions.get(scopes);
  if (memo === undefined) decisions.set(scopes, (memo = new Map()));
  const key = r === null ? op : r.group === undefined ? `${op}\0${r.name}` : `${op}\0${r.name}\0${r.group}`;
  let d = memo.get(key);
  if (d === undefined) {
    if (memo.size >= DECISION_MEMO) memo.clear();
    memo.set(key, (d = decideOnce(scopes, op, r)));
  }
  return d;
}

/** Decisions remembered per parsed Scopes (a token's scopes are parsed once per check, so a change starts afresh). */
const decisions = new WeakMap<Scopes, Map<string, Decision>>();
/** Most decisions remembered per Scopes; beyond, the memo starts over. */
const DECISION_MEMO = 1024;

function decideOnce(scopes: Scopes, op: Operation, r: Resource | null): Decision {
  const target = describeResource(r);
  const what = target === "" ? op : `${op} on ${target}`;
  for (const d of scopes.deny) if (scopeMatches(d, op, r)) return { allowed: false, reason: `permission denied: ${what} (denied by "${d.text}")` };
  if (scopes.allow.length === 0) return ALLOWED;
  for (const a of scopes.allow) if (scopeMatches(a, op, r)) return ALLOWED;
  return { allowed: false, reason: `permission denied: ${what} (no scope of the token allows it)` };
}

/**
 * What a caller whose `GET /v0/whoami` answered `allow` / `deny` (scope
 * texts) may do — for the console, which hides what a token cannot use
 * (the broker decides again on every request). `r`: the resource, or
 * `"any"` to ask whether `op` is allowed on some resource at all (the
 * "Create topic" form, before a name is typed); a `mortar.consume` or
 * `mq9.fetch` question without a group is asked for any group. A scope
 * that does not parse (never expected: the broker validated it) is
 * ignored, so the answer may show a button the broker then refuses.
 */
export function mayUse(who: { allow: readonly string[]; deny: readonly string[] }, op: Operation, r: Resource | "any"): boolean {
  const parse = (list: readonly string[]) => list.flatMap((t) => {
    try {
      return [parseScope(t)];
    } catch {
      return [];
    }
  });
  const allow = parse(who.allow);
  const deny = parse(who.deny);
  if (who.allow.length === 0 && who.deny.length === 0) return true;
  const anyGroup = r !== "any" && r.group === undefined;
  const covers = (s: Scope, whole: boolean) => {
    if (!opMatches(s.op, op)) return false;
    if (r === "any") return !whole || s.name === null;
    return scopeMatches(anyGroup ? { ...s, group: null } : s, op, r);
  };
  // "any": one allow covering some resource, no deny covering them all; a named resource: decide() without groups narrowing
  if (deny.some((d) => (r === "any" || !anyGroup || d.group === null) && covers(d, true))) return false;
  return who.allow.length === 0 || allow.some((a) => covers(a, false));
}
