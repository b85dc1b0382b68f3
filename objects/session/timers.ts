/**
 * Session timers (spec §1; DESIGN.md §4; docs/protocol.md "Timers"), pure:
 * - CONNECT deadline: a connection without a successful CONNECT is closed
 *   CONNECT_TIMEOUT_MS (10 s, `MORTAR_CONNECT_TIMEOUT_MS`) after it opened;
 *   frames before CONNECT (PING) do not extend it;
 * - keepalive: close after KEEPALIVE_CLOSE_MS (45 s) without a complete frame;
 * - half-frame: close after HALF_FRAME_TIMEOUT_MS (10 s) with a partial
 *   frame buffered.
 *
 * The Session keeps the times in memory and arms ONE storage alarm; the
 * alarm checks the times and re-arms. Frames never touch the alarm, except
 * that a partial frame starting earlier than the armed time pulls it in.
 */
import { CONNECT_TIMEOUT_MS, HALF_FRAME_TIMEOUT_MS, KEEPALIVE_CLOSE_MS } from "../../wire/mortar/constants";
import { positive } from "../shared/positive";

/** Times the timers depend on, ms since the epoch. */
export interface TimerState {
  /** When the last complete frame arrived (or the connection opened). */
  lastFrameAt: number;
  /** When the currently buffered partial frame started, or null. */
  partialSince: number | null;
  /** By when CONNECT must have succeeded; null once it did (or for a state restored without one). */
  connectBy: number | null;
}

/** Why a connection times out. */
export type Expiry = "connect" | "keepalive" | "half-frame";

/** `MORTAR_CONNECT_TIMEOUT_MS`, else CONNECT_TIMEOUT_MS (10 s): how long a connection may stay without CONNECT, ms. */
export function connectTimeoutMs(env: { MORTAR_CONNECT_TIMEOUT_MS?: string }): number {
  return positive(env.MORTAR_CONNECT_TIMEOUT_MS, CONNECT_TIMEOUT_MS);
}

/** The earliest deadline (ms) of `s`. */
export function nextDeadline(s: TimerState): number {
  let at = s.lastFrameAt + KEEPALIVE_CLOSE_MS;
  if (s.partialSince !== null) at = Math.min(at, s.partialSince + HALF_FRAME_TIMEOUT_MS);
  if (s.connectBy !== null) at = Math.min(at, s.connectBy);
  return at;
}

/** The timer that has expired at `now`, or null. Half-frame wins over the CONNECT deadline, which wins over keepalive. */
export function expired(s: TimerState, now: number): Expiry | null {
  if (s.partialSince !== null && now - s.partialSince >= HALF_FRAME_TIMEOUT_MS) return "half-frame";
  if (s.connectBy !== null && now >= s.connectBy) return "connect";
  if (now - s.lastFrameAt >= KEEPALIVE_CLOSE_MS) return "keepalive";
  return null;
}
