/**
 * Group commit for ACK/NACK (like pub-pipeline.ts for PUB), pure apart from
 * the injected settle call: one lane per (subscription, partition), at most
 * one Partition.settle call in flight per lane; ACK/NACKs arriving meanwhile
 * go together in the next call, which the Partition commits in one
 * transaction. Each operation answers its own response slot (OK or ERR).
 */
import { encodeFrame } from "../../wire/mortar/codec";
import { ErrorCode, errFrame } from "../../wire/mortar/errors";
import { okFrame } from "../../wire/mortar/results";
import type { SettleResult } from "../partition/rpc";
import { CALL_DEADLINE_MS, faultOf, withDeadline } from "./faults";

/** One ACK or NACK to settle. */
export interface SettleOp {
  kind: number; // SettleKind
  seq: number;
  deliveryId: number;
  ownershipEpoch: number;
  /** Op of the request (ACK or NACK), for its answer. */
  requestOp: number;
  slot: number;
}

/** What the lanes need from the Session. */
export interface SettleHost {
  /** Sends one batch for (subscription, partition). */
  settle(subscriptionId: number, partition: number, ops: readonly SettleOp[]): Promise<SettleResult>;
  respond(slot: number, frame: Uint8Array): void;
  /** Called after a batch's answers were filled. */
  answered(): void;
}

interface Lane {
  subscriptionId: number;
  partition: number;
  queue: SettleOp[];
  inFlight: boolean;
}

const TEXT: Record<number, string> = {
  [ErrorCode.STALE_OWNERSHIP_EPOCH]: "ownership_epoch is older than the partition's: another member owns it now",
  [ErrorCode.NOT_OWNER]: "this subscription does not own the partition under that ownership_epoch",
  [ErrorCode.UNKNOWN_DELIVERY]: "no delivery in flight with this sequence and delivery_id (settled, expired or redelivered)",
  [ErrorCode.TOPIC_DELETED]: "the topic was deleted",
};

export class SettleLanes {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly host: SettleHost, private readonly deadlineMs = CALL_DEADLINE_MS) {}

  /** Queues one operation; nothing is sent until flush(). */
  submit(subscriptionId: number, partition: number, op: SettleOp): void {
    const key = `${subscriptionId}/${partition}`;
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { subscriptionId, partition, queue: [], inFlight: false }));
    lane.queue.push(op);
  }

  /** Sends the queued operations of every lane with no call in flight. */
  flush(): void {
    for (const [key, lane] of this.lanes) this.dispatch(key, lane);
  }

  private dispatch(key: string, lane: Lane): void {
    if (lane.inFlight) return;
    if (lane.queue.length === 0) {
      this.lanes.delete(key);
      return;
    }
    const ops = lane.queue;
    lane.queue = [];
    lane.inFlight = true;
    withDeadline(this.host.settle(lane.subscriptionId, lane.partition, ops), this.deadlineMs).then(
      (r) => ops.forEach((op, i) => this.answer(op, r.codes[i] ?? ErrorCode.INTERNAL_ERROR, "")),
      (e) => {
        const f = faultOf(e);
        for (const op of ops) this.answer(op, f.code, f.message);
      },
    ).finally(() => {
      lane.inFlight = false;
      this.dispatch(key, lane);
      this.host.answered();
    });
  }

  private answer(op: SettleOp, code: number, message: string): void {
    this.host.respond(op.slot, encodeFrame(code === 0 ? okFrame(op.requestOp) : errFrame(code, op.requestOp, message || TEXT[code] || "")));
  }
}
