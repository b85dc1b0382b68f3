/**
 * The MortarSession's settings from Worker vars, pure.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | MORTAR_CONNECT_TIMEOUT_MS | 10000 | a connection without a successful CONNECT is closed this long after it opened (> 0) |
 */
import { CONNECT_TIMEOUT_MS } from "../../wire/mortar/constants";
import { positiveInt } from "../shared/int-var";

/** `MORTAR_CONNECT_TIMEOUT_MS`, else CONNECT_TIMEOUT_MS (10 s): how long a connection may stay without a successful CONNECT, ms. */
export function connectTimeoutMs(env: { MORTAR_CONNECT_TIMEOUT_MS?: string }): number {
  return positiveInt(env.MORTAR_CONNECT_TIMEOUT_MS, CONNECT_TIMEOUT_MS);
}

/** A member's group lease is this many session timeouts (memberLeaseMs). */
export const MEMBER_LEASE_FACTOR = 10;

/**
 * The group lease of a member whose MortarSession enforces the session
 * timeout itself, ms: MEMBER_LEASE_FACTOR × `sessionTimeoutMs` (7.5 min by
 * default). The session renews it every half lease; the group removes the
 * member when it lapses — the backstop for a session object that
 * disappeared without telling the group (docs/protocol.md "Group liveness").
 */
export function memberLeaseMs(sessionTimeoutMs: number): number {
  return MEMBER_LEASE_FACTOR * sessionTimeoutMs;
}
