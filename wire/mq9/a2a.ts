/**
 * The A2A push-notification inbox (DESIGN §8 "A2A inbox", docs/a2a.md):
 * the receiver token's form and what one A2A 1.0 push notification becomes
 * as an mq9 message. Pure; no imports of ours.
 *
 * Receiver token: `a2a_<tenant, base64url>_<32 random bytes, base64url>`.
 * The tenant part lets `POST /a2a/push/{mail_address}` find the mailbox
 * without a tenant token; the random part is what the mailbox checks
 * (stored as its SHA-256, compared in constant time).
 */

/** Prefix of every receiver token. */
export const A2A_TOKEN_PREFIX = "a2a_";

/** Kinds of A2A 1.0 `StreamResponse` payloads a push notification carries. */
export type A2aKind = "task" | "status-update" | "artifact-update" | "message";

/** What the broker stores for one notification. */
export interface A2aEvent {
  kind: A2aKind;
  /** The task id (`correlation_id` of the message). */
  taskId: string;
}

function b64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(s: string): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}

/** A new receiver token for `tenant` (crypto-random, 32 bytes). */
export function newReceiverToken(tenant: string): string {
  return `${A2A_TOKEN_PREFIX}${b64url(new TextEncoder().encode(tenant))}_${b64url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/** Tenant ids (wire/admin/tenants.ts TENANT_ID_RE, static tenants too): what a receiver token may name. */
const TENANT_ID_RE = /^[a-z0-9_-]{1,64}$/;

/**
 * The tenant a receiver token names, or null when `token` is not of the
 * form or names no possible tenant id: the token is checked by the tenant's
 * Mailbox, so a name that cannot be a tenant must not reach (and create) an
 * object — the route is open to anyone.
 */
export function receiverTokenTenant(token: string): string | null {
  if (!token.startsWith(A2A_TOKEN_PREFIX) || token.length > 512) return null;
  const rest = token.slice(A2A_TOKEN_PREFIX.length);
  const sep = rest.indexOf("_");
  if (sep <= 0 || !/^[A-Za-z0-9_-]{43}$/.test(rest.slice(sep + 1))) return null;
  const tenant = unb64url(rest.slice(0, sep));
  return tenant !== null && TENANT_ID_RE.test(tenant) ? tenant : null;
}

/** Hex SHA-256 of `text` (the stored form of a receiver token; the event key's digest). */
export async function sha256Hex(text: string | Uint8Array): Promise<string> {
  const data = typeof text === "string" ? new TextEncoder().encode(text) : text;
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Reads one push notification body (A2A 1.0 `StreamResponse`: exactly one of
 * `task`, `statusUpdate`, `artifactUpdate`, `message`; the v0.3 form with
 * `kind` is accepted too). Returns null when it is not one (the route answers 400).
 */
export function parseA2aNotification(body: unknown): A2aEvent | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const o = body as Record<string, unknown>;
  const wrapped: [string, A2aKind][] = [["task", "task"], ["statusUpdate", "status-update"], ["artifactUpdate", "artifact-update"], ["message", "message"]];
  for (const [field, kind] of wrapped) {
    const v = o[field];
    if (typeof v === "object" && v !== null) {
      const inner = v as Record<string, unknown>;
      const taskId = kind === "task" ? inner.id : inner.taskId;
      return typeof taskId === "string" && taskId !== "" ? { kind, taskId } : null;
    }
  }
  const kind = o.kind;
  const legacy: Record<string, A2aKind> = { task: "task", "status-update": "status-update", "artifact-update": "artifact-update", message: "message" };
  if (typeof kind === "string" && kind in legacy) {
    const taskId = kind === "task" ? o.id : o.taskId;
    return typeof taskId === "string" && taskId !== "" ? { kind: legacy[kind]!, taskId } : null;
  }
  return null;
}

/**
 * The `mq9-key` of a notification: `a2a:<sha256 of task id and body>` — the
 * same notification re-delivered has the same key, a different event of
 * the task (another state, timestamp or artifact chunk) another one.
 */
export async function a2aEventKey(taskId: string, body: Uint8Array): Promise<string> {
  const id = new TextEncoder().encode(taskId + "\n");
  const all = new Uint8Array(id.length + body.length);
  all.set(id);
  all.set(body, id.length);
  return `a2a:${await sha256Hex(all)}`;
}
