/**
 * `AUTH_TOKENS` parsing (pure; objects/tenants/auth.ts uses it; docs/tenants.md
 * "Auth modes" and "Permissions"): comma-separated `token:tenant` entries (a
 * bare `token` maps to tenant `default`), each optionally followed by scopes:
 * `token:tenant:allow=<scope>;allow=<scope>;deny=<scope>`.
 */
import { TENANT_ID_RE } from "../../wire/admin/tenants";
import { ScopeError, parseScopes, type Scopes } from "../../wire/admin/scopes";
import type { ScopeLists } from "./rpc";

/** Tenant used when the broker runs open (no tokens configured), and of a bare static token. */
export const OPEN_TENANT = "default";

/** One `AUTH_TOKENS` entry: its tenant and scopes (undefined = full tenant access). */
export interface StaticToken {
  tenant: string;
  scopes?: Scopes;
}

/** Where an entry's scopes start: the first `:allow=` or `:deny=`. */
const STATIC_SCOPES_RE = /:(allow|deny)=/;

/**
 * Parses `AUTH_TOKENS` into token → tenant and scopes (module comment).
 * Entries with a malformed tenant id or scope are skipped.
 */
export function parseStaticEntries(spec: string | undefined): Map<string, StaticToken> {
  const out = new Map<string, StaticToken>();
  for (const raw of (spec ?? "").split(",")) {
    let item = raw.trim();
    if (!item) continue;
    let scopes: Scopes | undefined;
    const m = STATIC_SCOPES_RE.exec(item);
    if (m) {
      const lists: ScopeLists = { allow: [], deny: [] };
      let bad = false;
      for (const rule of item.slice(m.index + 1).split(";")) {
        const eq = rule.indexOf("=");
        const kind = rule.slice(0, eq).trim();
        if (eq < 0 || (kind !== "allow" && kind !== "deny")) bad = true;
        else lists[kind].push(rule.slice(eq + 1).trim());
      }
      try {
        scopes = parseScopes(lists.allow, lists.deny);
      } catch (e) {
        if (!(e instanceof ScopeError)) throw e;
        bad = true;
      }
      if (bad) continue;
      item = item.slice(0, m.index);
    }
    const i = item.lastIndexOf(":");
    const token = i > 0 ? item.slice(0, i) : item;
    const tenant = i > 0 ? item.slice(i + 1) : OPEN_TENANT;
    if (TENANT_ID_RE.test(tenant)) out.set(token, scopes ? { tenant, scopes } : { tenant });
  }
  return out;
}

/** Parses `AUTH_TOKENS` into token → tenant (parseStaticEntries without the scopes). */
export function parseStaticTokens(spec: string | undefined): Map<string, string> {
  return new Map([...parseStaticEntries(spec)].map(([t, e]) => [t, e.tenant]));
}
