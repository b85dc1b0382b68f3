/**
 * Priority lanes (mq9 spec, 优先级说明): critical > urgent > normal, FIFO
 * inside a lane, strict between lanes. A lane is the index in
 * `PRIORITIES`: 0 = critical (delivered first), 2 = normal.
 */
import { Mq9Error, echo } from "./errors";

/** Priorities in delivery order (lane 0 first). */
export const PRIORITIES = ["critical", "urgent", "normal"] as const;

/** An mq9 priority value. */
export type Priority = (typeof PRIORITIES)[number];

/** Lane index of a priority: 0 critical, 1 urgent, 2 normal. */
export type Lane = 0 | 1 | 2;

/** Number of lanes. */
export const LANE_COUNT = PRIORITIES.length;

/** Priority used when `mq9-priority` is absent. */
export const DEFAULT_PRIORITY: Priority = "normal";

/** Lane of `p` (0 = delivered first). */
export function laneOf(p: Priority): Lane {
  return PRIORITIES.indexOf(p) as Lane;
}

/** Priority of lane `lane`; throws RangeError for a lane outside 0..2. */
export function priorityOfLane(lane: number): Priority {
  const p = PRIORITIES[lane];
  if (p === undefined) throw new RangeError(`no priority lane ${lane}`);
  return p;
}

/**
 * Parses an `mq9-priority` value (exact lower-case spelling, surrounding
 * spaces ignored). Throws Mq9Error(bad_request) for anything else — an
 * unknown priority is an error, never silently `normal` (DESIGN.md §5).
 */
export function parsePriority(value: string): Priority {
  const v = value.trim();
  if ((PRIORITIES as readonly string[]).includes(v)) return v as Priority;
  throw new Mq9Error("bad_request", `invalid mq9-priority "${echo(value)}": expected normal, urgent or critical`);
}

/**
 * Delivery order of two messages: lower lane first, then lower msg_id
 * (FIFO inside a lane). Negative when `a` is delivered before `b`.
 */
export function compareDelivery(a: { lane: number; msgId: number }, b: { lane: number; msgId: number }): number {
  return a.lane - b.lane || a.msgId - b.msgId;
}
