/**
 * The tenant admin API's shared, pure parts (docs/tenants.md): tenant ids,
 * the issued-token format, quotas, the JSON request/response shapes (zod),
 * and a constant-time byte comparison. Used by the Worker (validation), the
 * TenantDirectory object and the `mortarmq admin` CLI. No platform imports.
 *
 * Issued token: `mmq.<tenant>.<token_id>.<secret>` — the tenant id, a
 * 12-hex-digit token id (the "selector", also how the token is named for
 * revocation) and 43 characters of base64url carrying 256 random bits (the
 * "verifier"). The broker stores only SHA-256 of the whole token and
 * compares it in constant time; the tenant and token id in the token let
 * every transport find the one tenant object that can check it, so no
 * global lookup sits on the connection path.
 */
import { z } from "zod";

/** Tenant ids: 1–64 chars of [a-z0-9_-]; they prefix every object key. */
export const TENANT_ID_RE = /^[a-z0-9_-]{1,64}$/;

/** Token ids: 12 lower-case hex digits. */
export const TOKEN_ID_RE = /^[0-9a-f]{12}$/;

/** Bytes of randomness in an issued token's secret (256 bits). */
export const TOKEN_SECRET_BYTES = 32;

/** Prefix of every issued token. */
export const TOKEN_PREFIX = "mmq";

const ISSUED_TOKEN_RE = /^mmq\.([a-z0-9_-]{1,64})\.([0-9a-f]{12})\.([A-Za-z0-9_-]{43})$/;

/** The public parts of an issued token. */
export interface IssuedTokenParts {
  tenant: string;
  tokenId: string;
}

/** The tenant and token id of a string shaped like an issued token, else null (it may still be a static token). */
export function parseIssuedToken(token: string): IssuedTokenParts | null {
  const m = ISSUED_TOKEN_RE.exec(token);
  return m ? { tenant: m[1]!, tokenId: m[2]! } : null;
}

/** Builds an issued token from its parts (`secret`: TOKEN_SECRET_BYTES random bytes). */
export function formatIssuedToken(tenant: string, tokenId: string, secret: Uint8Array): string {
  return `${TOKEN_PREFIX}.${tenant}.${tokenId}.${base64url(secret)}`;
}

/** base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/**
 * Constant-time equality of two byte strings: the time depends only on the
 * longer length, never on where they differ (different lengths are unequal).
 */
export function timingSafeEqualBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

const te = new TextEncoder();

/** Constant-time equality of two strings (UTF-8 bytes compared in full). */
export function timingSafeEqualStr(a: string, b: string): boolean {
  return timingSafeEqualBytes(te.encode(a), te.encode(b));
}

// ------------------------------------------------------------------ quotas

/**
 * Per-tenant quotas; `null` = unset: unlimited, except for the mailbox
 * fields (DEFAULTED_QUOTA_FIELDS), where it means the broker's default
 * limit (Worker vars MQ9_MAILBOXES_PER_TENANT, MQ9_MAILBOX_CREATES_PER_S;
 * docs/tenants.md "Default limits").
 * Units: messages per second, bytes per second, bytes, connections, mailboxes, mailboxes per second.
 */
export interface Quotas {
  /** MortarMQ PUB + mq9 SEND messages per second, over all the tenant's connections and HTTP. */
  publish_msgs_per_s: number | null;
  /** Bytes per second of the same (MortarMQ value bytes, mq9 payload bytes). */
  publish_bytes_per_s: number | null;
  /** Stored message bytes (`mortarmq_stored_bytes`, both systems). */
  storage_bytes: number | null;
  /** Concurrent MortarMQ + NATS WebSocket connections. */
  connections: number | null;
  /** mq9 mailboxes that exist (null: the broker default, 10,000). */
  mailboxes: number | null;
  /** mq9 mailbox CREATEs per second, bursts of 10 s of it (null: the broker default, 20/s). */
  mailbox_creates_per_s: number | null;
  /** MortarMQ topic partitions over all the tenant's topics, a `.dlq` twin counted with its topic (null: the broker default, 10,000). */
  partitions: number | null;
}

/** Every quota field, in display order. */
export const QUOTA_FIELDS = ["publish_msgs_per_s", "publish_bytes_per_s", "storage_bytes", "connections", "mailboxes", "mailbox_creates_per_s", "partitions"] as const;

/** Quota fields whose `null` means the broker's default limit rather than unlimited. */
export const DEFAULTED_QUOTA_FIELDS: readonly (keyof Quotas)[] = ["mailboxes", "mailbox_creates_per_s", "partitions"];

/** Every quota unset (unlimited; the mailbox and partition fields at the broker's defaults). */
export const UNLIMITED: Quotas = Object.freeze({
  publish_msgs_per_s: null, publish_bytes_per_s: null, storage_bytes: null, connections: null, mailboxes: null, mailbox_creates_per_s: null, partitions: null,
});

/** True when `q` sets a publish rate (messages or bytes). */
export function hasRateQuota(q: Quotas): boolean {
  return q.publish_msgs_per_s !== null || q.publish_bytes_per_s !== null;
}

const limit = z.number({ error: "must be a whole number ≥ 1, or null for unlimited" })
  .int("must be a whole number ≥ 1, or null for unlimited")
  .min(1, "must be ≥ 1, or null for unlimited")
  .max(Number.MAX_SAFE_INTEGER)
  .nullable();

/** `PUT /admin/tenants/:id/quotas` body: every field optional; absent = unset (unlimited; the mailbox and partition fields: the broker default). The body replaces all quotas. */
export const quotasSchema = z.strictObject({
  publish_msgs_per_s: limit.optional(),
  publish_bytes_per_s: limit.optional(),
  storage_bytes: limit.optional(),
  connections: limit.optional(),
  mailboxes: limit.optional(),
  mailbox_creates_per_s: limit.optional(),
  partitions: limit.optional(),
});

/** Normalizes a parsed quotas body (absent → null). */
export function toQuotas(body: z.infer<typeof quotasSchema>): Quotas {
  return {
    publish_msgs_per_s: body.publish_msgs_per_s ?? null,
    publish_bytes_per_s: body.publish_bytes_per_s ?? null,
    storage_bytes: body.storage_bytes ?? null,
    connections: body.connections ?? null,
    mailboxes: body.mailboxes ?? null,
    mailbox_creates_per_s: body.mailbox_creates_per_s ?? null,
    partitions: body.partitions ?? null,
  };
}

// ------------------------------------------------------------------ request / response shapes

/** Cloudflare jurisdictions a tenant's objects may be pinned to (docs/tenants.md "Jurisdiction"). */
export const jurisdictionSchema = z.enum(["eu", "fedramp", "fedramp-high"], { error: "must be eu, fedramp or fedramp-high" });

/** A Cloudflare jurisdiction (objects/shared/jurisdiction.ts). */
export type Jurisdiction = z.infer<typeof jurisdictionSchema>;

/** `PUT /admin/tenants/:id/jurisdiction` body (null: none). Refused 409 while the tenant holds data. */
export const jurisdictionBodySchema = z.strictObject({ jurisdiction: jurisdictionSchema.nullable() });

/** `POST /admin/tenants` body. */
export const createTenantSchema = z.strictObject({
  id: z.string().regex(TENANT_ID_RE, "must be 1-64 chars of [a-z0-9_-]"),
  /** Free text for the operator (shown in lists), ≤ 200 chars. */
  name: z.string().max(200).optional(),
  /** Initial quotas (default: all unset). */
  quotas: quotasSchema.optional(),
  /** The jurisdiction every object of the tenant is created in (default: none). */
  jurisdiction: jurisdictionSchema.optional(),
});

/** Longest token lifetime, s (10 years): `expires_in_s` at most this, `expires_at` at most this far from now. */
export const MAX_TOKEN_LIFETIME_S = 10 * 366 * 86_400;

/**
 * Why a token expiry `expiresAtMs` (unix ms) cannot be issued at `nowMs`
 * (the `error` of a 400, naming `expires_at`), or null when it can: it must
 * be in the future and at most MAX_TOKEN_LIFETIME_S away — the same cap as
 * `expires_in_s`.
 */
export function tokenExpiryError(expiresAtMs: number, nowMs: number): string | null {
  const at = new Date(expiresAtMs).toISOString();
  if (expiresAtMs <= nowMs) return `expires_at: ${at} is not in the future`;
  if (expiresAtMs > nowMs + MAX_TOKEN_LIFETIME_S * 1000) return `expires_at: ${at} is more than 10 years (${MAX_TOKEN_LIFETIME_S} s) from now`;
  return null;
}

/** `POST /admin/tenants/:id/tokens` body (may be empty). At most one of `expires_in_s` / `expires_at`; neither = never expires. */
export const issueTokenSchema = z.strictObject({
  /** What the token is for, ≤ 200 chars (shown in lists, never secret). */
  label: z.string().max(200).optional(),
  /** The token is refused this many seconds after it was issued (1 s … 10 years). */
  expires_in_s: z.number({ error: "must be a whole number of seconds ≥ 1" }).int("must be a whole number of seconds ≥ 1")
    .min(1, "must be ≥ 1 second").max(MAX_TOKEN_LIFETIME_S, `must be at most 10 years (${MAX_TOKEN_LIFETIME_S} s)`).optional(),
  /** The token is refused from this time on (ISO 8601 with a time zone, in the future, at most 10 years ahead: tokenExpiryError). */
  expires_at: z.iso.datetime({ offset: true, error: "must be an ISO 8601 time with a time zone, e.g. 2026-12-31T00:00:00Z" }).optional(),
  /** Scopes the token is allowed (wire/admin/scopes.ts; checked with parseScopes by the route). Absent or empty with no deny = full tenant access. */
  allow: z.array(z.string()).optional(),
  /** Scopes the token is refused (deny wins over allow). */
  deny: z.array(z.string()).optional(),
}).refine((b) => b.expires_in_s === undefined || b.expires_at === undefined, { error: "give expires_in_s or expires_at, not both", path: ["expires_at"] });

/** `PUT /admin/tenants/:id/tokens/:tokenId/scopes`: the token's new scopes (both empty = full tenant access). */
export const tokenScopesSchema = z.strictObject({
  allow: z.array(z.string()).default([]),
  deny: z.array(z.string()).default([]),
});

/** A token as listed (never the secret). */
export const tokenInfoSchema = z.object({
  token_id: z.string(),
  label: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  /** When it stops working (null = never). Absent from brokers before token expiry: null. */
  expires_at: z.string().nullable().default(null),
  /** Last authentication with it — new connection, HTTP request or an open connection's re-check — to the minute (null = never). */
  last_used_at: z.string().nullable().default(null),
  /** Scopes (docs/tenants.md "Permissions"); both empty = full tenant access. Absent from brokers before scopes: empty. */
  allow: z.array(z.string()).default([]),
  deny: z.array(z.string()).default([]),
});

/** `GET /admin/tenants/:id/tokens`. */
export const tokenListSchema = z.object({ tenant: z.string(), tokens: z.array(tokenInfoSchema) });

/** Quotas as answered: every field present, null = unset (see Quotas). */
const quotasOut = z.object(Object.fromEntries(QUOTA_FIELDS.map((f) => [f, z.number().nullable()])) as Record<keyof Quotas, z.ZodNullable<z.ZodNumber>>);

/** One row of `GET /admin/tenants`. */
export const tenantSummarySchema = z.object({
  id: z.string(),
  name: z.string(),
  /** `directory`: created through the admin API; `static`: configured in AUTH_TOKENS (or the open broker's `default`). */
  source: z.enum(["directory", "static"]),
  /** Null for static tenants. */
  created_at: z.string().nullable(),
  deleted_at: z.string().nullable(),
});

/** A deleted tenant's purge (docs/tenants.md "Deleting a tenant"). */
export const purgeSchema = z.object({
  /** `waiting` (for open connections to close), `running`, `done`. */
  state: z.enum(["waiting", "running", "done"]),
  /** The step it is at: waiting, topics, mailboxes, agents, registry, mailbox-index, usage, done. */
  phase: z.string(),
  requested_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  /** When the next step runs (null when done). */
  next_step_at: z.string().nullable(),
  /** Objects purged so far. */
  purged: z.object({ groups: z.number(), partitions: z.number(), mailboxes: z.number() }),
  /** Objects to purge, estimated when the work started (null before). */
  estimated: z.object({ groups: z.number(), partitions: z.number(), mailboxes: z.number() }).nullable(),
  /** Steps done (one bounded page each). */
  steps: z.number(),
  /** Why the last attempt of the current step failed (it is retried); null when it succeeded. */
  last_error: z.string().nullable(),
});

/** A tenant as `GET /admin/tenants/:id` answers it. */
export const tenantSchema = tenantSummarySchema.extend({
  quotas: quotasOut,
  tokens: z.array(tokenInfoSchema),
  /** The purge of a deleted tenant's data; null for a tenant never deleted (absent from older brokers). */
  purge: purgeSchema.nullable().default(null),
  /** The jurisdiction the tenant's objects are created in; null = none (absent from older brokers). */
  jurisdiction: jurisdictionSchema.nullable().default(null),
});

/** `PUT /admin/tenants/:id/quotas` answer. */
export const quotasAnswerSchema = z.object({ tenant: z.string(), quotas: quotasOut });

/** `GET /admin/tenants`. */
export const tenantListSchema = z.object({ tenants: z.array(tenantSummarySchema) });

/** `POST /admin/tenants/:id/tokens` answer (201): the only time `token` is shown. */
export const issuedTokenSchema = z.object({
  tenant: z.string(),
  token_id: z.string(),
  token: z.string(),
  label: z.string(),
  created_at: z.string(),
  expires_at: z.string().nullable().default(null),
  allow: z.array(z.string()).default([]),
  deny: z.array(z.string()).default([]),
});

/** One hour of a tenant's usage, or the totals of a range (docs/operations.md "Usage metering"). */
export const usageHourSchema = z.object({
  requests: z.number(), messages_in: z.number(), messages_out: z.number(), bytes_in: z.number(),
  bytes_out: z.number(), connection_seconds: z.number(), storage_bytes: z.number(),
  // What the hour cost on Cloudflare's bill (docs/tenants.md "What a tenant costs"); 0 from a broker that does not count it.
  rows_written: z.number().default(0), rows_read: z.number().default(0), do_requests: z.number().default(0),
  worker_requests: z.number().default(0),
});
/** `GET /admin/tenants/:id/usage`: hours (ISO `hour`) of [from, to) and their totals. */
export const usageAnswerSchema = z.object({
  tenant: z.string(), from: z.string(), to: z.string(),
  hours: z.array(usageHourSchema.extend({ hour: z.string() })),
  totals: usageHourSchema,
});

export type TenantDoc = z.infer<typeof tenantSchema>;
export type PurgeDoc = z.infer<typeof purgeSchema>;
export type TenantSummary = z.infer<typeof tenantSummarySchema>;
export type TokenInfo = z.infer<typeof tokenInfoSchema>;
export type TokenList = z.infer<typeof tokenListSchema>;
export type IssuedToken = z.infer<typeof issuedTokenSchema>;
export type UsageHours = z.infer<typeof usageHourSchema>;
export type UsageAnswer = z.infer<typeof usageAnswerSchema>;

/**
 * The first zod issue as `path: message` (or the message alone), for a 400
 * answer. An unknown field of a strict object is `name: unknown field`, with
 * the fields it takes when `known` lists them (`extra: unknown field (the body
 * takes to, partition)`), not zod's `Unrecognized key: "extra"`.
 */
export function firstIssue(error: z.ZodError, known?: readonly string[]): string {
  const i = error.issues[0];
  if (!i) return "invalid body";
  if (i.code === "unrecognized_keys") {
    const at = [...i.path, i.keys[0] ?? ""].join(".");
    return `${at}: unknown field${known && i.path.length === 0 ? ` (the body takes ${known.join(", ")})` : ""}`;
  }
  return i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message;
}
