/**
 * The console's side of the broker's HTTP APIs (docs/console.md): the token
 * kept in sessionStorage (never in a URL), sent as `Authorization: Bearer`;
 * the operator's chosen tenant added as `?tenant=`; errors as exceptions
 * carrying the broker's `error` text and the HTTP status.
 */
import { mayUse, type Operation, type Resource } from "../wire/admin/scopes";
import type { WhoamiAnswer } from "../wire/admin/console";

const TOKEN_KEY = "mortarmq.token";
const TENANT_KEY = "mortarmq.tenant";

/** An answer other than 2xx: `message` is the broker's `error` text. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** The stored token ("" = none). */
export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

/** Stores the token for this browser tab (sessionStorage), or forgets it (""). */
export function setToken(t: string): void {
  if (t === "") sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, t);
}

let who: WhoamiAnswer | null = null;
let tenantChoice = sessionStorage.getItem(TENANT_KEY) ?? "";

/** Who the token is, once `whoami` answered. */
export function identity(): WhoamiAnswer | null {
  return who;
}

/**
 * May the signed-in token use `op` on `r` (`"any"`: on some resource)?
 * From its scopes in `whoami` (wire/admin/scopes.ts mayUse): the pages hide
 * what it cannot use; the broker still decides every request. The operator
 * and tokens without scopes may do everything.
 */
export function can(op: Operation, r: Resource | "any"): boolean {
  return !who || who.role === "operator" || mayUse(who, op, r);
}

/** The tenant the pages show: the token's, or the operator's choice. */
export function currentTenant(): string {
  if (!who) return "";
  return who.role === "operator" && tenantChoice !== "" ? tenantChoice : who.tenant;
}

/** The operator switches to tenant `t`. */
export function chooseTenant(t: string): void {
  tenantChoice = t;
  sessionStorage.setItem(TENANT_KEY, t);
}

/** Asks the broker who the token is; ApiError 401 when it needs (another) token. */
export async function whoami(): Promise<WhoamiAnswer> {
  who = await request<WhoamiAnswer>("GET", "/v0/whoami", undefined, false);
  return who;
}

/** A path with the operator's tenant as `?tenant=` (tenant tokens need none: it is their own). */
function scoped(path: string): string {
  if (!who || who.role !== "operator" || tenantChoice === "") return path;
  return `${path}${path.includes("?") ? "&" : "?"}tenant=${encodeURIComponent(tenantChoice)}`;
}

/**
 * One JSON call. `body`: an object (sent as JSON) or a string (sent as is).
 * @throws ApiError for a non-2xx answer
 */
export async function request<T>(method: string, path: string, body?: unknown, withTenant = true, headers: Record<string, string> = {}): Promise<T> {
  const h: Record<string, string> = { accept: "application/json", ...headers };
  const t = token();
  if (t !== "") h.authorization = `Bearer ${t}`;
  let payload: string | undefined;
  if (body !== undefined) {
    payload = typeof body === "string" ? body : JSON.stringify(body);
    if (typeof body !== "string") h["content-type"] = "application/json";
  }
  const res = await fetch(withTenant ? scoped(path) : path, { method, headers: h, body: payload, credentials: "omit", cache: "no-store" });
  let json: unknown = null;
  try {
    json = await res.json();
  } catch {
    /* not JSON */
  }
  const error = (json as { error?: unknown } | null)?.error;
  if (!res.ok) throw new ApiError(res.status, typeof error === "string" && error !== "" ? error : `HTTP ${res.status}`);
  return json as T;
}

/** `GET path` (tenant-scoped). */
export const get = <T,>(path: string) => request<T>("GET", path);

/**
 * One mq9 request as the current tenant (`POST /v0/mq9/<subject>`): the
 * reply; an mq9 `error` (any status) is thrown as ApiError.
 */
export async function mq9<T = Record<string, unknown>>(subject: string, body: unknown = "", headers: Record<string, string> = {}): Promise<T> {
  return request<T>("POST", `/v0/mq9/${encodeURIComponent(subject).replace(/%24/g, "$")}`, typeof body === "string" ? body : JSON.stringify(body), true, headers);
}

/** A path segment. */
export const seg = (s: string) => encodeURIComponent(s);
