/**
 * Consumer-group position of one mailbox (pure; docs/mq9.md "Cursor and ACK").
 *
 * A stateful group keeps, per priority lane, an ack floor: every message of
 * that lane with msg_id < floor is acknowledged and never delivered to the
 * group again; messages at or above it are delivered, in delivery order
 * (lane, then msg_id). FETCH never moves a floor; ACK does:
 *
 * 1. ACK(X), X in lane L: floor[L] = max(floor[L], X + 1) — cumulative inside
 *    the lane (everything of lane L before X was delivered before X, FIFO).
 * 2. If X was delivered by the group's most recent non-empty FETCH, every
 *    higher-priority lane L' < L that the same batch delivered moves to just
 *    after the last message of L' in that batch: strict priority put those
 *    messages before X, so "ACK the last message of the batch" acknowledges
 *    the whole batch (the spec's paging flow).
 * 3. Nothing else moves: lower-priority lanes never move on an ACK of a
 *    higher lane, a higher lane never moves past a message the group was not
 *    given before X, and no floor ever decreases (only FETCH with
 *    `force_deliver` resets a group).
 * 4. An ACK of X above the highest msg_id of lane L ever delivered to the
 *    group (since its first FETCH or last `force_deliver`) is refused:
 *    acknowledging a message the group was never given would skip it and
 *    everything before it unseen.
 */
import { LANE_COUNT, type Lane } from "../../wire/mq9";

/** Inclusive msg_id range a batch delivered in one lane, or null for none. */
export type LaneRange = readonly [first: number, last: number] | null;

/** A group's persisted position. */
export interface GroupCursor {
  /** Ack floor per lane (index = lane). */
  floors: number[];
  /**
   * Highest msg_id delivered to the group per lane (index = lane); starts at
   * the position − 1 (nothing delivered). An ACK above it is refused (rule 4).
   */
  delivered: number[];
  /** Per-lane ranges of the group's most recent non-empty FETCH, or null. */
  batch: LaneRange[] | null;
}

/** A position where every lane starts at `start` (nothing delivered, no batch recorded). */
export function cursorAt(start: number): GroupCursor {
  return {
    floors: Array.from({ length: LANE_COUNT }, () => start),
    delivered: Array.from({ length: LANE_COUNT }, () => start - 1),
    batch: null,
  };
}

/**
 * How a stateful FETCH opens its group (docs/mq9.md "FETCH"):
 * - `read`: the group exists and the FETCH keeps its position;
 * - `start`: a new group, or `force_deliver` — the group (re)starts at
 *   `cursor` (every lane at the FETCH's start id), which must be saved;
 * - `full`: a new group while the mailbox already holds `maxGroups` groups
 *   (an existing group is never refused).
 */
export type GroupOpening = { kind: "read" } | { kind: "start"; cursor: GroupCursor } | { kind: "full" };

/**
 * Decides {@link GroupOpening} for a FETCH of a group whose stored cursor is
 * `stored` (null = the group never fetched). `groupCount` and `startId` (the
 * first msg_id the FETCH's deliver policy names) are asked only when needed.
 */
export function openGroup(
  stored: GroupCursor | null,
  forceDeliver: boolean,
  groupCount: () => number,
  startId: () => number,
  maxGroups: number,
): GroupOpening {
  if (stored === null && groupCount() >= maxGroups) return { kind: "full" };
  if (stored === null || forceDeliver) return { kind: "start", cursor: cursorAt(startId()) };
  return { kind: "read" };
}

/**
 * Records the messages a FETCH delivered (in any order): the new last batch
 * and the per-lane highest delivered msg_id. An empty delivery keeps the
 * previous batch so that a late ACK of it still applies rule 2.
 */
export function recordBatch(c: GroupCursor, batch: readonly { lane: Lane; msgId: number }[]): GroupCursor {
  if (batch.length === 0) return c;
  const ranges: ([number, number] | null)[] = Array.from({ length: LANE_COUNT }, () => null);
  for (const { lane, msgId } of batch) {
    const r = ranges[lane];
    if (!r) ranges[lane] = [msgId, msgId];
    else {
      r[0] = Math.min(r[0], msgId);
      r[1] = Math.max(r[1], msgId);
    }
  }
  const delivered = c.delivered.map((d, lane) => Math.max(d, ranges[lane]?.[1] ?? -1));
  return { floors: c.floors, delivered, batch: ranges };
}

/** True when `msgId` of `lane` lies in the lane's range of the last batch. */
export function inLastBatch(c: GroupCursor, lane: Lane, msgId: number): boolean {
  const r = c.batch?.[lane];
  return !!r && r[0] <= msgId && msgId <= r[1];
}

/**
 * Lane of a message that is no longer stored (deleted, compacted, expired)
 * but may have been delivered by the last batch: the highest-priority lane
 * whose batch range contains `msgId` (the choice that acknowledges the
 * least), or null when no range contains it.
 */
export function laneFromLastBatch(c: GroupCursor, msgId: number): Lane | null {
  for (let lane = 0; lane < LANE_COUNT; lane++) if (inLastBatch(c, lane as Lane, msgId)) return lane as Lane;
  return null;
}

/** Outcome of an ACK: the new cursor, or a refusal under rule 4 with the lane's highest delivered msg_id. */
export type AckOutcome =
  | { ok: true; cursor: GroupCursor; changed: boolean }
  | { ok: false; highestDelivered: number };

/**
 * Applies ACK(msgId in lane) per rules 1–4: refused when msgId was never
 * delivered to the group (above `delivered[lane]`), else the new cursor and
 * whether it changed.
 */
export function applyAck(c: GroupCursor, lane: Lane, msgId: number): AckOutcome {
  if (msgId > c.delivered[lane]) return { ok: false, highestDelivered: c.delivered[lane] };
  const floors = [...c.floors];
  floors[lane] = Math.max(floors[lane], msgId + 1);
  if (inLastBatch(c, lane, msgId)) {
    for (let higher = 0; higher < lane; higher++) {
      const r = c.batch?.[higher];
      if (r) floors[higher] = Math.max(floors[higher], r[1] + 1);
    }
  }
  const changed = floors.some((f, i) => f !== c.floors[i]);
  return { ok: true, cursor: { floors, delivered: c.delivered, batch: c.batch }, changed };
}

/** Serializes a cursor for the `groups` table. */
export function encodeCursor(c: GroupCursor): { floors: string; delivered: string; batch: string | null } {
  return { floors: JSON.stringify(c.floors), delivered: JSON.stringify(c.delivered), batch: c.batch ? JSON.stringify(c.batch) : null };
}

/**
 * Parses a `groups` row back into a cursor. A row written before
 * `delivered` was tracked (null) gets the most that is known to have been
 * delivered: just below the floor, or the last batch's end.
 */
export function decodeCursor(floors: string, batch: string | null, delivered: string | null = null): GroupCursor {
  const f = JSON.parse(floors) as number[];
  const b = batch ? (JSON.parse(batch) as LaneRange[]) : null;
  const d = delivered ? (JSON.parse(delivered) as number[]) : f.map((floor, lane) => Math.max(floor - 1, b?.[lane]?.[1] ?? -1));
  return { floors: f, delivered: d, batch: b };
}
