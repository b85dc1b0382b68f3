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
