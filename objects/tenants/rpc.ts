/**
 * Shapes of the TenantDirectory RPC methods that sessions, the Worker and
 * the admin routes call (objects/tenants/TenantDirectory.ts).
 */
import type { Quotas, TenantDoc, TenantSummary, IssuedToken } from "../../wire/admin/tenants";
import type { Scopes } from "../../wire/admin/scopes";
import type { Jurisdiction } from "../../wire/admin/tenants";

/** An issued token's scopes as stored and sent between objects (scope strings; wire/admin/scopes.ts parses them). */
export interface ScopeLists {
  allow: string[];
  deny: string[];
}

/** What a connection or Worker isolate needs to enforce the tenant's quotas. */
export interface TenantState {
  quotas: Quotas;
  /** A storage quota is set and the tenant's stored bytes (counting pipeline) reached it. */
  storageFull: boolean;
  /** The tenant's stored bytes as last read from its UsageAggregator (0 when no storage quota is set). */
  storedBytes: number;
  /** A directory tenant's jurisdiction (null: none; absent: not told — objects/shared/jurisdiction.ts). */
  jurisdiction?: Jurisdiction | null;
}

/** Which transport a connection uses (connection quota and leases). */
export type ConnectionProtocol = "mortar" | "nats";

/** `TenantDirectory.openConnection` / `renew` request. */
export interface ConnectRequest {
  /** Issued token's id and SHA-256 (hex) — absent for static (AUTH_TOKENS) and open-broker connections. */
  tokenId?: string;
  tokenHash?: string;
  /** The connection's lease id (unique per connection). */
  leaseId: string;
  protocol: ConnectionProtocol;
}

/** Why a connection or token was refused. */
export type RefusalReason = "invalid" | "revoked" | "expired" | "deleted" | "connections";

/** `openConnection` / `renew` / `authenticate` answer. */
export type ConnectAnswer =
  /**
   * `expiresAt`: the token's expiry, unix ms (null: none; absent: not an issued-token check).
   * `scopes`: the issued token's scopes (absent: none — full tenant access, or not an issued-token check).
   */
  | { ok: true; state: TenantState; expiresAt?: number | null; scopes?: ScopeLists }
  | { ok: false; reason: RefusalReason; message: string };

/** `lease` answer: budget granted (Infinity where unlimited) and the current state. */
export interface LeaseAnswer {
  msgs: number;
  bytes: number;
  state: TenantState;
}

/**
 * `admitMailbox` answer; `at` identifies an admission that reserved a slot of
 * the count (for `unadmitMailbox`). Refused by the creation rate (`rate`) or
 * the count (`mailboxes`).
 */
export type AdmitAnswer = { ok: true; at?: number } | { ok: false; kind: "rate" | "mailboxes"; message: string; retryAfterMs: number };

/** Answer to `admitPush` (PUSH_MAX_SUBSCRIPTIONS, docs/push.md): `at` is for `unadmitPush`. */
export type PushAdmitAnswer = { ok: true; at?: number } | { ok: false; message: string; retryAfterMs: number };

/** Admin results carry the HTTP status the route answers with. */
export type AdminResult<T> = { ok: true; value: T } | { ok: false; status: 400 | 404 | 409; error: string };

export type { Quotas, TenantDoc, TenantSummary, IssuedToken };

/** A row of the index of directory tenants (`indexList`, `directoryRow`); times unix ms. */
export interface DirectoryRow {
  id: string;
  name: string;
  created_at: number;
  deleted_at: number | null;
  /** The tenant's jurisdiction (null or absent: none). */
  jurisdiction?: Jurisdiction | null;
}

/** Result of authenticating a token. */
export type AuthResult =
  | {
    ok: true;
    tenant: string;
    open: boolean;
    /** Set for an issued token (the connection re-checks it by id). */
    tokenId?: string;
    /** The tenant's quota state when the tenant object was asked (issued tokens, connections). */
    state?: TenantState;
    /** The token's scopes (wire/admin/scopes.ts `decide`); absent = full tenant access. */
    scopes?: Scopes;
  }
  | { ok: false; reason: "missing" | "unavailable" | RefusalReason; message: string };
