/**
 * `mortarmq admin …`: the operator's tenant directory (docs/tenants.md,
 * docs/cli.md "Admin"): tenants create|list|describe|delete, tokens
 * issue|list|revoke, quotas set|show, usage. Every command calls the admin HTTP
 * API with the operator token from `--admin-token` or MORTARMQ_ADMIN_TOKEN
 * (none is needed on an open local broker). Answers are validated with the
 * API's own schemas (wire/admin/tenants.ts).
 */
import { Option, type Command } from "commander";
import { z } from "zod";
import {
  DEFAULTED_QUOTA_FIELDS, QUOTA_FIELDS, TENANT_ID_RE, TOKEN_ID_RE, issuedTokenSchema, quotasAnswerSchema, tenantListSchema, tenantSchema,
  tokenListSchema, usageAnswerSchema, type PurgeDoc, type Quotas, type TenantDoc, type TokenInfo, type UsageAnswer, type UsageHours,
  jurisdictionSchema,
} from "../../wire/admin/tenants";
import { action, printJson, printLine, type GlobalOptions } from "./context";
import { usageError } from "./errors";
import { formatBytes, formatFields, formatTable, type Cell } from "./format";
import { apiRequest, type BrokerRequestOptions, type StatusHints } from "./http";
import { parseBytes, parseDurationS } from "./parse";

/** Error names for admin API statuses. */
const STATUS_NAMES: StatusHints = {
  400: ["BAD_REQUEST", "check the arguments (see mortarmq admin --help)"],
  401: ["UNAUTHORIZED", "pass the operator token with --admin-token (or --token), or MORTARMQ_ADMIN_TOKEN"],
  403: ["FORBIDDEN", "that is a tenant's token: /admin needs the operator token (ADMIN_TOKEN)"],
  404: ["NOT_FOUND", "see mortarmq admin tenants list"],
  409: ["CONFLICT", ""],
  503: ["UNAVAILABLE", "retry in a moment"],
};

/**
 * One admin API call; returns the answer validated with `schema`.
 * @throws CliError named by the HTTP status (UNAUTHORIZED, NOT_FOUND, …) with the broker's `error`, or BAD_ANSWER
 */
export function adminRequest<S extends z.ZodType>(g: GlobalOptions, adminToken: string | undefined, path: string,
  opts: BrokerRequestOptions, schema: S): Promise<z.infer<S>> {
  return apiRequest({ ...g, token: adminToken }, path, opts, schema, STATUS_NAMES, "this broker build has no tenant admin API");
}

/**
 * A quota flag value: a whole number ≥ 1 (bytes may use units, e.g. `10MiB`;
 * see parseBytes), or `unlimited` (null). A quota with a broker default
 * (`defaulted`: the mailbox quotas) takes `default` (null) instead of
 * `unlimited`.
 * @throws CliError USAGE otherwise
 */
export function parseQuota(flag: string, value: string, defaulted = false): number | null {
  const v = value.trim();
  if (defaulted && /^default$/i.test(v)) return null;
  if (/^(unlimited|none|null)$/i.test(v)) {
    if (defaulted) throw usageError(`${flag} has a broker default and cannot be unlimited: give a number (e.g. 1000000) or "default"`);
    return null;
  }
  try {
    if (/^\d+\s*[a-z]*$/i.test(v)) return parseBytes(flag, value, 1);
  } catch {
    /* reported below, in the quota's terms */
  }
  throw usageError(`${flag} must be a whole number ≥ 1 (e.g. 1000, 10MiB) or ${defaulted ? '"default"' : '"unlimited"'}, not "${value}"`);
}

/** The `quotas set` body: the current quotas with the given flags applied (PUT replaces them all). */
export function mergeQuotas(current: Quotas, flags: Record<string, string | undefined>): Quotas {
  const next: Quotas = { ...current };
  for (const f of QUOTA_FIELDS) {
    const v = flags[camel(f)];
    if (v !== undefined) next[f] = parseQuota(`--${f.replace(/_/g, "-")}`, v, DEFAULTED_QUOTA_FIELDS.includes(f));
  }
  return next;
}

/** Human text of quotas. */
export function renderQuotas(q: Quotas): string {
  const show = (f: (typeof QUOTA_FIELDS)[number]): Cell => {
    const v = q[f];
    if (v === null) return DEFAULTED_QUOTA_FIELDS.includes(f) ? "broker default" : "unlimited";
    return f.includes("bytes") ? `${v} (${formatBytes(v)}${f.endsWith("_per_s") ? "/s" : ""})` : v;
  };
  return formatFields(QUOTA_FIELDS.map((f) => [f.replace(/_/g, " "), show(f)]));
}

/** A `--jurisdiction` value, checked (a usage error otherwise). */
function jurisdictionArg(v: string): string {
  const ok = jurisdictionSchema.options as readonly string[];
  if (!ok.includes(v)) throw usageError(`jurisdiction must be one of ${ok.join(", ")}, not "${v}"`);
  return v;
}

/** Human text of one tenant. */
export function renderTenant(t: TenantDoc): string {
  let out = formatFields([
    ["tenant", t.id],
    ["name", t.name || "-"],
    ["source", t.source === "static" ? "static (AUTH_TOKENS / open broker)" : "directory"],
    ["created", t.created_at ?? "-"],
    ["deleted", t.deleted_at ?? "-"],
    ["jurisdiction", t.jurisdiction ?? "none"],
  ]);
  if (t.purge) out += "\n" + renderPurge(t.purge);
  out += "\n" + renderQuotas(t.quotas);
  out += "\n" + renderTokens(t.tokens);
  return out;
}

/** Human text of a deleted tenant's purge progress. */
export function renderPurge(p: PurgeDoc): string {
  const of = (k: "groups" | "partitions" | "mailboxes") => (p.estimated ? `${p.purged[k]} of ~${p.estimated[k]}` : `${p.purged[k]}`);
  return formatFields([
    ["purge", p.state === "done" ? `done at ${p.finished_at}` : p.state === "waiting" ? `waiting until ${p.next_step_at} (open connections close first)` : `running: ${p.phase}`],
    ["requested", p.requested_at],
    ["started", p.started_at ?? "-"],
    ["purged", `${of("partitions")} partitions, ${of("groups")} groups, ${of("mailboxes")} mailboxes (${p.steps} steps)`],
    ...(p.last_error ? [["last error", `${p.last_error} (retried)`] as [string, Cell]] : []),
  ]);
}

/** Human table of tokens (never their secrets): ids, labels, creation, revocation, expiry and last use. */
export function renderTokens(tokens: readonly TokenInfo[], now = Date.now()): string {
  if (tokens.length === 0) return "no issued tokens\n";
  const state = (k: TokenInfo): string =>
    k.revoked_at !== null ? "revoked" : k.expires_at !== null && Date.parse(k.expires_at) <= now ? "expired" : "active";
  return formatTable(["token id", "label", "state", "created", "expires", "last used", "revoked", "scopes"],
    tokens.map((k) => [k.token_id, k.label || "-", state(k), k.created_at, k.expires_at ?? "never", k.last_used_at ?? "never", k.revoked_at ?? "-", scopeCell(k)]));
}

/** A token's scopes in one cell: `all` (no scopes), else `allow a, b; deny c`. */
export function scopeCell(k: Pick<TokenInfo, "allow" | "deny">): string {
  if (k.allow.length === 0 && k.deny.length === 0) return "all";
  return [k.allow.length ? `allow ${k.allow.join(", ")}` : "", k.deny.length ? `deny ${k.deny.join(", ")}` : ""].filter(Boolean).join("; ");
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/** Registers `admin` and its subcommands on `program`. */
export function registerAdmin(program: Command): void {
  const admin = program.command("admin")
    .description("operator commands: tenants, issued tokens, quotas, usage (needs ADMIN_TOKEN)")
    .addOption(new Option("--admin-token <token>", "the operator token (ADMIN_TOKEN; default: --token)").env("MORTARMQ_ADMIN_TOKEN"));
  // The operator token: --admin-token / MORTARMQ_ADMIN_TOKEN, else the global --token / MORTARMQ_TOKEN
  // (`mortarmq admin … --token <ADMIN_TOKEN>` used to be ignored, answered "missing bearer token").
  const tokenOf = (cmd: Command): string | undefined => {
    const o = cmd.optsWithGlobals<{ adminToken?: string; token?: string }>();
    const t = o.adminToken?.trim() || o.token?.trim();
    return t ? t : undefined;
  };
  const tenantId = (id: string): string => {
    if (!TENANT_ID_RE.test(id)) throw usageError(`tenant id must be 1-64 chars of [a-z0-9_-], not "${id}"`);
    return id;
  };

  const tenants = admin.command("tenants").description("create, list, describe and delete tenants");
  tenants.command("create <id>")
    .description("create a tenant (a deleted tenant's id only once its purge is done: the new tenant starts empty)")
    .option("--name <text>", "free text shown in lists")
    .option("--jurisdiction <j>", "create every object of the tenant in this Cloudflare jurisdiction: eu, fedramp or fedramp-high (default: none)")
    .action(action(async (g, id: string, o: { name?: string; jurisdiction?: string }, cmd: Command) => {
      const body = { id: tenantId(id), ...(o.name ? { name: o.name } : {}), ...(o.jurisdiction ? { jurisdiction: jurisdictionArg(o.jurisdiction) } : {}) };
      const t = await adminRequest(g, tokenOf(cmd), "/admin/tenants",
        { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }, tenantSchema);
      if (g.json) printJson(t);
      else printLine(`created tenant ${t.id}${t.jurisdiction ? ` (jurisdiction ${t.jurisdiction})` : ""}; issue a token with: mortarmq admin tokens issue ${t.id}`);
    }));
  tenants.command("set-jurisdiction <id> <jurisdiction>")
    .description("move a tenant's future objects to a jurisdiction (eu, fedramp, fedramp-high, or none): refused while the tenant holds data")
    .action(action(async (g, id: string, j: string, _o: unknown, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(id)}/jurisdiction`,
        { method: "PUT", body: JSON.stringify({ jurisdiction: j === "none" ? null : jurisdictionArg(j) }), headers: { "content-type": "application/json" } }, tenantSchema);
      if (g.json) printJson(t);
      else printLine(`tenant ${t.id}: jurisdiction ${t.jurisdiction ?? "none"}`);
    }));
  tenants.command("list")
    .description("every tenant: directory tenants (deleted ones too) and static ones")
    .action(action(async (g, _o: unknown, cmd: Command) => {
      const l = await adminRequest(g, tokenOf(cmd), "/admin/tenants", { method: "GET" }, tenantListSchema);
      if (g.json) printJson(l);
      else if (l.tenants.length === 0) printLine("no tenants");
      else process.stdout.write(formatTable(["tenant", "name", "source", "created", "deleted"],
        l.tenants.map((t) => [t.id, t.name || "-", t.source, t.created_at ?? "-", t.deleted_at ?? "-"])));
    }));
  tenants.command("describe <id>").alias("show")
    .description("one tenant: record, purge progress of a deleted one, quotas and tokens (never their secrets)")
    .action(action(async (g, id: string, _o: unknown, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(id)}`, { method: "GET" }, tenantSchema);
      if (g.json) printJson(t);
      else process.stdout.write(renderTenant(t));
    }));
  tenants.command("delete <id>")
    .description("delete a tenant: every token is revoked (open connections close within TENANT_REVALIDATE_MS), then all its data is purged; again: the purge's progress")
    .action(action(async (g, id: string, _o: unknown, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(id)}`, { method: "DELETE" }, tenantSchema);
      if (g.json) printJson(t);
      else if (t.purge && t.purge.state !== "waiting") process.stdout.write(`tenant ${t.id} was deleted at ${t.deleted_at}\n` + renderPurge(t.purge));
      else printLine(`deleted tenant ${t.id}: ${t.tokens.length} token(s) revoked; its data is purged from ${t.purge?.next_step_at ?? "now"} (see mortarmq admin tenants describe ${t.id})`);
    }));

  const tokens = admin.command("tokens").description("issue, list, scope and revoke a tenant's tokens");
  tokens.command("issue <tenant>")
    .description("issue a token — printed once, never shown again (the broker keeps only its hash)")
    .option("--label <text>", "what the token is for")
    .option("--expires-in <duration>", "refuse the token after this long, e.g. 12h, 1.5h, 30d: a whole number of seconds, at most 10 years (a bare number is seconds; default: never)")
    .option("--allow <scope>", "allow only this operation[:resource] (repeatable; e.g. 'mq9.send:orders.*', 'mortar.consume:orders/billing'; docs/tenants.md \"Permissions\")", collect, [])
    .option("--deny <scope>", "refuse this operation[:resource], over any allow (repeatable; e.g. 'mq9.*:secret.>')", collect, [])
    .action(action(async (g, tenant: string, o: { label?: string; expiresIn?: string; allow: string[]; deny: string[] }, cmd: Command) => {
      const body: Record<string, unknown> = {};
      if (o.label) body.label = o.label;
      if (o.allow.length) body.allow = o.allow;
      if (o.deny.length) body.deny = o.deny;
      if (o.expiresIn !== undefined) body.expires_in_s = parseDurationS("--expires-in", o.expiresIn, 1);
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(tenant)}/tokens`,
        { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }, issuedTokenSchema);
      if (g.json) printJson(t);
      else printLine(`${t.token}\n(token id ${t.token_id} of tenant ${t.tenant}${t.expires_at ? `, expires ${t.expires_at}` : ""}, scopes: ${scopeCell(t)}; store it now: it is not shown again)`);
    }));
  tokens.command("list <tenant>")
    .description("a tenant's tokens (never their secrets): state, expiry and last use (to the minute)")
    .action(action(async (g, tenant: string, _o: unknown, cmd: Command) => {
      const l = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(tenant)}/tokens`, { method: "GET" }, tokenListSchema);
      if (g.json) printJson(l);
      else process.stdout.write(renderTokens(l.tokens));
    }));
  tokens.command("revoke <tenant> <tokenId>")
    .description("revoke a token: refused at once for new connections and requests")
    .action(action(async (g, tenant: string, tokenId: string, _o: unknown, cmd: Command) => {
      if (!TOKEN_ID_RE.test(tokenId)) throw usageError(`token id must be 12 hex digits (see mortarmq admin tenants show ${tenant}), not "${tokenId}"`);
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(tenant)}/tokens/${tokenId}`, { method: "DELETE" },
        tenantSchema.shape.tokens.element);
      if (g.json) printJson(t);
      else printLine(`revoked token ${t.token_id} of tenant ${tenant} (at ${t.revoked_at})`);
    }));
  tokens.command("scopes <tenant> <tokenId>")
    .description("replace a token's scopes (no --allow and no --deny: full tenant access); open connections take them at their next token re-check")
    .option("--allow <scope>", "allow only this operation[:resource] (repeatable)", collect, [])
    .option("--deny <scope>", "refuse this operation[:resource], over any allow (repeatable)", collect, [])
    .action(action(async (g, tenant: string, tokenId: string, o: { allow: string[]; deny: string[] }, cmd: Command) => {
      if (!TOKEN_ID_RE.test(tokenId)) throw usageError(`token id must be 12 hex digits (see mortarmq admin tenants show ${tenant}), not "${tokenId}"`);
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(tenant)}/tokens/${tokenId}/scopes`,
        { method: "PUT", body: JSON.stringify({ allow: o.allow, deny: o.deny }), headers: { "content-type": "application/json" } }, tenantSchema.shape.tokens.element);
      if (g.json) printJson(t);
      else printLine(`token ${t.token_id} of tenant ${tenant}: scopes ${scopeCell(t)}`);
    }));

  const quotas = admin.command("quotas").description("show and set a tenant's quotas (default: unlimited)");
  const set = quotas.command("set <tenant>")
    .description("change some quotas (the others stay); a value is a whole number ≥ 1 or \"unlimited\"");
  for (const f of QUOTA_FIELDS) set.option(`--${f.replace(/_/g, "-")} <n>`, QUOTA_HELP[f]);
  set.action(action(async (g, tenant: string, o: Record<string, string | undefined>, cmd: Command) => {
    const id = tenantId(tenant);
    if (QUOTA_FIELDS.every((f) => o[camel(f)] === undefined)) throw usageError("give at least one quota flag, e.g. --publish-msgs-per-s 1000");
    const current = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${id}`, { method: "GET" }, tenantSchema);
    const r = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${id}/quotas`,
      { method: "PUT", body: JSON.stringify(mergeQuotas(current.quotas, o)), headers: { "content-type": "application/json" } }, quotasAnswerSchema);
    if (g.json) printJson(r);
    else process.stdout.write(`quotas of ${id}:\n` + renderQuotas(r.quotas));
  }));
  quotas.command("show <tenant>")
    .description("a tenant's quotas")
    .action(action(async (g, tenant: string, _o: unknown, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(tenant)}`, { method: "GET" }, tenantSchema);
      if (g.json) printJson({ tenant: t.id, quotas: t.quotas });
      else process.stdout.write(renderQuotas(t.quotas));
    }));

  admin.command("usage <tenant>")
    .description("metering per hour (GET /admin/tenants/:id/usage): requests, messages and bytes in/out, storage, connection-seconds, and its cost units: SQLite rows written/read, Durable Object requests")
    .option("--from <time>", "unix ms or ISO 8601 (default: 24 hours before --to)")
    .option("--to <time>", "unix ms or ISO 8601 (default: now)")
    .action(action(async (g, tenant: string, o: { from?: string; to?: string }, cmd: Command) => {
      const q = new URLSearchParams();
      if (o.from) q.set("from", o.from);
      if (o.to) q.set("to", o.to);
      const path = `/admin/tenants/${tenantId(tenant)}/usage${q.size ? `?${q}` : ""}`;
      const u = await adminRequest(g, tokenOf(cmd), path, { method: "GET" }, usageAnswerSchema);
      if (g.json) printJson(u);
      else process.stdout.write(renderUsage(u));
    }));
}

const QUOTA_HELP: Readonly<Record<(typeof QUOTA_FIELDS)[number], string>> = {
  publish_msgs_per_s: "MortarMQ PUB + mq9 SEND messages per second",
  publish_bytes_per_s: "published value/payload bytes per second (KiB/MiB/GiB allowed)",
  storage_bytes: "stored message bytes (KiB/MiB/GiB allowed)",
  connections: "concurrent MortarMQ + NATS connections",
  mailboxes: "mq9 mailboxes (\"default\": the broker's default, 10000)",
  mailbox_creates_per_s: "mq9 mailbox CREATEs per second (\"default\": the broker's default, 20)",
  partitions: "MortarMQ topic partitions over all topics, .dlq twins not counted (\"default\": the broker's default, 10000)",
};

/** snake_case → camelCase (commander's option keys). */
function camel(s: string): string {
  return s.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** Human text of a usage answer: hours with any traffic or storage, then the totals. */
export function renderUsage(u: UsageAnswer): string {
  // connection seconds and DO requests (WebSocket messages count 1/20) are fractional sums: at most 3 decimals, not 3.8339999999999996
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const row = (label: string, h: UsageHours): Cell[] =>
    [label, h.requests, h.messages_in, h.messages_out, formatBytes(h.bytes_in), formatBytes(h.bytes_out), formatBytes(h.storage_bytes), r3(h.connection_seconds),
      h.rows_written, h.rows_read, r3(h.do_requests), h.worker_requests];
  const rows = u.hours.filter((h) => h.requests || h.messages_in || h.messages_out || h.storage_bytes || h.connection_seconds || h.rows_written || h.do_requests || h.worker_requests)
    .map((h) => row(h.hour, h));
  rows.push(row("total", u.totals));
  return `usage of ${u.tenant} from ${u.from} to ${u.to}\n`
    + formatTable(["hour", "requests", "msgs in", "msgs out", "bytes in", "bytes out", "storage", "conn s", "rows written", "rows read", "DO requests", "Worker requests"], rows);
}
