/**
 * Read-path timers and limits (docs/protocol.md "Read path" → Defaults),
 * with per-deployment overrides from Worker vars. Every var is optional;
 * an empty, non-numeric or non-positive value means the default.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | MORTAR_ACK_WAIT_MS | 30000 | work deadline of a delivery before redelivery |
 * | MORTAR_MAX_DELIVERY_ATTEMPTS | 5 | deliveries before a message is dead-lettered |
 * | MORTAR_GROUP_SESSION_TIMEOUT_MS | 45000 | a member without a valid HEARTBEAT this long is removed |
 * | MORTAR_REVOCATION_TIMEOUT_MS | 10000 | a REVOKE not confirmed this long is forced |
 */
import {
  DEFAULT_ACK_WAIT_MS, GROUP_SESSION_TIMEOUT_MS, MAX_DELIVERY_ATTEMPTS, REVOCATION_TIMEOUT_MS,
} from "../../wire/mortar/constants";
import { positiveInt } from "./int-var";


export interface ReadConfig {
  /** Work deadline per delivery, ms. */
  ackWaitMs: number;
  /** Deliveries (attempts) before dead-lettering, ≥ 1, ≤ 65535. */
  maxAttempts: number;
  /** Group session timeout, ms. */
  sessionTimeoutMs: number;
  /** Revocation timeout, ms. */
  revocationTimeoutMs: number;
}


/** The read-path vars (a subset of Env, so that this module stays free of bindings). */
export interface ReadVars {
  MORTAR_ACK_WAIT_MS?: string;
  MORTAR_MAX_DELIVERY_ATTEMPTS?: string;
  MORTAR_GROUP_SESSION_TIMEOUT_MS?: string;
  MORTAR_REVOCATION_TIMEOUT_MS?: string;
}

/** The read-path configuration of this deployment. */
export function readConfig(env: ReadVars): ReadConfig {
  return {
    ackWaitMs: positiveInt(env.MORTAR_ACK_WAIT_MS, DEFAULT_ACK_WAIT_MS),
    maxAttempts: positiveInt(env.MORTAR_MAX_DELIVERY_ATTEMPTS, MAX_DELIVERY_ATTEMPTS, 0xffff),
    sessionTimeoutMs: positiveInt(env.MORTAR_GROUP_SESSION_TIMEOUT_MS, GROUP_SESSION_TIMEOUT_MS),
    revocationTimeoutMs: positiveInt(env.MORTAR_REVOCATION_TIMEOUT_MS, REVOCATION_TIMEOUT_MS),
  };
}
