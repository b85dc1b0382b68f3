/**
 * The Mailbox's read path, pure (no storage, no platform): where a FETCH
 * or a push subscription starts, and which stored messages one reply
 * takes. The glue (Mailbox.ts, push/driver.ts) reads the rows through the
 * callbacks (store.ts) and persists the cursor (cursor.ts).
 */
import { LANE_COUNT, type DeliverPolicy, type Lane } from "../../wire/mq9";
import { ReplyBudget } from "./batch";

/**
 * First msg_id a FETCH (or a new push subscription) starting with
 * `deliver` delivers: `latest` the next msg_id to be assigned
 * (`nextMsgId`), `earliest` 0, `from_id` that id, `from_time` the first
 * message stored at or after that time (`firstIdAt(ms)`), or `nextMsgId`
 * when there is none.
 */
export function startId(deliver: DeliverPolicy, nextMsgId: number, firstIdAt: (ms: number) => number | null): number {
  switch (deliver.kind) {
    case "latest":
      return nextMsgId;
    case "earliest":
      return 0;
    case "from_id":
      return deliver.fromId;
    case "from_time":
      return firstIdAt(deliver.fromTimeSec * 1000) ?? nextMsgId;
  }
}

/** What a reply needs of a stored message. */
export interface Readable {
  size: number;
}

/**
 * The next reply from per-lane `floors`: lanes in priority order
 * (critical, urgent, normal), FIFO inside each, at most `limit` messages
 * and `maxBytes` of payload (the first message always fits). A lane whose
 * floor is above its highest stored msg_id (`laneTops`, -1 = none) is not
 * read. `readLane(lane, floor, max)` yields a lane's visible messages from
 * `floor` in msg_id order, at most `max`.
 */
export function readBatch<M extends Readable>(
  floors: readonly number[], limit: number, maxBytes: number, laneTops: readonly number[],
  readLane: (lane: Lane, floor: number, max: number) => Iterable<M>,
): M[] {
  const budget = new ReplyBudget(limit, maxBytes);
  const out: M[] = [];
  for (let lane = 0; lane < LANE_COUNT && !budget.full; lane++) {
    if (floors[lane]! > laneTops[lane]!) continue;
    for (const m of readLane(lane as Lane, floors[lane]!, limit - out.length)) {
      if (!budget.admit(m.size)) return out;
      out.push(m);
    }
  }
  return out;
}
