/**
 * `mortarmq admin …`: the operator's tenant directory (docs/tenants.md,
 * docs/cli.md "Admin"): tenants create|list|show|delete, tokens
 * issue|revoke, quotas set|show, usage. Every command calls the admin HTTP
 * API with the operator token from `--admin-token` or MORTARMQ_ADMIN_TOKEN
 * (none is needed on an open local broker). Answers are validated with the
 * API's own schemas (wire/admin/tenants.ts).
 */
import { Option, type Command } from "commander";
import { z } from "zod";
import {
  DEFAULTED_QUOTA_FIELDS, QUOTA_FIELDS, TENANT_ID_RE, TOKEN_ID_RE, firstIssue, issuedTokenSchema, quotasAnswerSchema, tenantListSchema, tenantSchema,
  usageAnswerSchema, type Quotas, type TenantDoc, type UsageAnswer, type UsageHours,
} from "../../wire/admin/tenants";
import { action, printJson, printLine, type GlobalOptions } from "./context";
import { CliError, usageError } from "./errors";
import { formatBytes, formatFields, formatTable, type Cell } from "./format";
import { brokerRequest, type BrokerRequestOptions } from "./http";

/** Error names for admin API statuses. */
const STATUS_NAMES: Readonly<Record<number, [string, string]>> = {
  400: ["BAD_REQUEST", "check the arguments (see mortarmq admin --help)"],
  401: ["UNAUTHORIZED", "pass the operator token with --admin-token or MORTARMQ_ADMIN_TOKEN"],
  403: ["FORBIDDEN", "that is a tenant's token: /admin needs the operator token (ADMIN_TOKEN)"],
  404: ["NOT_FOUND", "see mortarmq admin tenants list"],
  409: ["CONFLICT", ""],
  503: ["UNAVAILABLE", "retry in a moment"],
};

/**
 * One admin API call; returns the answer validated with `schema`.
 * @throws CliError named by the HTTP status (UNAUTHORIZED, NOT_FOUND, …) with the broker's `error`, or BAD_ANSWER
 */
export async function adminRequest<S extends z.ZodType>(g: GlobalOptions, adminToken: string | undefined, path: string,
  opts: BrokerRequestOptions, schema: S): Promise<z.infer<S>> {
  const a = await brokerRequest({ ...g, token: adminToken }, path, { ...opts, headers: { accept: "application/json", ...opts.headers } });
  if (a.status < 200 || a.status > 299) {
    const error = (a.json as { error?: unknown } | undefined)?.error;
    const [name, hint] = STATUS_NAMES[a.status] ?? ["HTTP_ERROR", "check the broker's logs"];
    if (a.status === 404 && typeof error !== "string") {
      throw new CliError("NOT_SERVED", `the broker does not serve ${path}`, "this broker build has no tenant admin API", 404);
    }
    throw new CliError(name, typeof error === "string" ? error : `HTTP ${a.status}: ${a.text.slice(0, 200)}`, hint, a.status);
  }
  const parsed = schema.safeParse(a.json);
  if (!parsed.success) {
    throw new CliError("BAD_ANSWER", `${opts.method} ${path} answered an unexpected document (${firstIssue(parsed.error)})`, "the CLI and the broker disagree on the admin API (docs/tenants.md)");
  }
  return parsed.data;
}

/**
 * A quota flag value: a whole number ≥ 1 (bytes may use KiB/MiB/GiB, e.g.
 * `10MiB`), or `unlimited` (null). A quota with a broker default
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
  const m = /^(\d+)\s*(k|ki|kib|m|mi|mib|g|gi|gib)?b?$/i.exec(v);
  const unit = { "": 1, k: 1024, ki: 1024, kib: 1024, m: 1024 ** 2, mi: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gi: 1024 ** 3, gib: 1024 ** 3 } as Record<string, number>;
  const n = m ? Number(m[1]) * (unit[(m[2] ?? "").toLowerCase()] ?? NaN) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw usageError(`${flag} must be a whole number ≥ 1 (e.g. 1000, 10MiB) or "unlimited", not "${value}"`);
  return n;
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

/** Human text of one tenant. */
export function renderTenant(t: TenantDoc): string {
  let out = formatFields([
    ["tenant", t.id],
    ["name", t.name || "-"],
    ["source", t.source === "static" ? "static (AUTH_TOKENS / open broker)" : "directory"],
    ["created", t.created_at ?? "-"],
    ["deleted", t.deleted_at ?? "-"],
  ]);
  out += "\n" + renderQuotas(t.quotas);
  out += "\n" + (t.tokens.length === 0
    ? "no issued tokens\n"
    : formatTable(["token id", "label", "created", "revoked"], t.tokens.map((k) => [k.token_id, k.label || "-", k.created_at, k.revoked_at ?? "-"])));
  return out;
}

/** Registers `admin` and its subcommands on `program`. */
export function registerAdmin(program: Command): void {
  const admin = program.command("admin")
    .description("operator commands: tenants, issued tokens, quotas, usage (needs ADMIN_TOKEN)")
    .addOption(new Option("--admin-token <token>", "the operator token (ADMIN_TOKEN)").env("MORTARMQ_ADMIN_TOKEN"));
  const tokenOf = (cmd: Command): string | undefined => {
    const t = cmd.optsWithGlobals<{ adminToken?: string }>().adminToken?.trim();
    return t ? t : undefined;
  };
  const tenantId = (id: string): string => {
    if (!TENANT_ID_RE.test(id)) throw usageError(`tenant id must be 1-64 chars of [a-z0-9_-], not "${id}"`);
    return id;
  };

  const tenants = admin.command("tenants").description("create, list, show and delete tenants");
  tenants.command("create <id>")
    .description("create a tenant (ids are never reused, not even after delete)")
    .option("--name <text>", "free text shown in lists")
    .action(action(async (g, id: string, o: { name?: string }, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), "/admin/tenants",
        { method: "POST", body: JSON.stringify({ id: tenantId(id), ...(o.name ? { name: o.name } : {}) }), headers: { "content-type": "application/json" } }, tenantSchema);
      if (g.json) printJson(t);
      else printLine(`created tenant ${t.id}; issue a token with: mortarmq admin tokens issue ${t.id}`);
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
  tenants.command("show <id>")
    .description("one tenant: record, quotas and tokens (never their secrets)")
    .action(action(async (g, id: string, _o: unknown, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(id)}`, { method: "GET" }, tenantSchema);
      if (g.json) printJson(t);
      else process.stdout.write(renderTenant(t));
    }));
  tenants.command("delete <id>")
    .description("delete a tenant: every token is revoked (open connections close within TENANT_REVALIDATE_MS); its data is kept, unreachable")
    .action(action(async (g, id: string, _o: unknown, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(id)}`, { method: "DELETE" }, tenantSchema);
      if (g.json) printJson(t);
      else printLine(`deleted tenant ${t.id}: ${t.tokens.length} token(s) revoked`);
    }));

  const tokens = admin.command("tokens").description("issue and revoke a tenant's tokens");
  tokens.command("issue <tenant>")
    .description("issue a token — printed once, never shown again (the broker keeps only its hash)")
    .option("--label <text>", "what the token is for")
    .action(action(async (g, tenant: string, o: { label?: string }, cmd: Command) => {
      const t = await adminRequest(g, tokenOf(cmd), `/admin/tenants/${tenantId(tenant)}/tokens`,
        { method: "POST", body: JSON.stringify(o.label ? { label: o.label } : {}), headers: { "content-type": "application/json" } }, issuedTokenSchema);
      if (g.json) printJson(t);
      else printLine(`${t.token}\n(token id ${t.token_id} of tenant ${t.tenant}; store it now: it is not shown again)`);
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
    .description("metering per hour (GET /admin/tenants/:id/usage): requests, messages and bytes in/out, storage, connection-seconds")
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
};

/** snake_case → camelCase (commander's option keys). */
function camel(s: string): string {
  return s.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** Human text of a usage answer: hours with any traffic or storage, then the totals. */
export function renderUsage(u: UsageAnswer): string {
  const row = (label: string, h: UsageHours): Cell[] =>
    [label, h.requests, h.messages_in, h.messages_out, formatBytes(h.bytes_in), formatBytes(h.bytes_out), formatBytes(h.storage_bytes), h.connection_seconds];
  const rows = u.hours.filter((h) => h.requests || h.messages_in || h.messages_out || h.storage_bytes || h.connection_seconds).map((h) => row(h.hour, h));
  rows.push(row("total", u.totals));
  return `usage of ${u.tenant} from ${u.from} to ${u.to}\n` + formatTable(["hour", "requests", "msgs in", "msgs out", "bytes in", "bytes out", "storage", "conn s"], rows);
}
