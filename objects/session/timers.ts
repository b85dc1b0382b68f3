/**
 * Session timers (spec §1; DESIGN.md §4), pure: keepalive close after
 * KEEPALIVE_CLOSE_MS (45 s) without a complete frame, half-frame close
 * after HALF_FRAME_TIMEOUT_MS (10 s) with a partial frame buffered.
 *
 * The Session keeps the times in memory and arms ONE storage alarm; the
 * alarm checks the times and re-arms. Frames never touch the alarm, except
 * that a partial frame starting earlier than the armed time pulls it in.
 */
import { HALF_FRAME_TIMEOUT_MS, KEEPALIVE_CLOSE_MS } from "../../wire/mortar/constants";

/** Times the timers depend on, ms since the epoch. */
export interface TimerState {
  /** When the last complete frame arrived (or the connection opened). */
  lastFrameAt: number;
  /** When the currently buffered partial frame started, or null. */
  partialSince: number | null;
}

/** Why a connection times out. */
export type Expiry = "keepalive" | "half-frame";

/** The earliest deadline (ms) of `s`. */
export function nextDeadline(s: TimerState): number {
  const keepalive = s.lastFrameAt + KEEPALIVE_CLOSE_MS;
  return s.partialSince === null ? keepalive : Math.min(keepalive, s.partialSince + HALF_FRAME_TIMEOUT_MS);
}

/** The timer that has expired at `now`, or null. Half-frame wins when both did. */
export function expired(s: TimerState, now: number): Expiry | null {
  if (s.partialSince !== null && now - s.partialSince >= HALF_FRAME_TIMEOUT_MS) return "half-frame";
  if (now - s.lastFrameAt >= KEEPALIVE_CLOSE_MS) return "keepalive";
  return null;
}
