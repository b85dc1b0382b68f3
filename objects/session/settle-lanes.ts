/**
 * Group commit for ACK/NACK (like pub-pipeline.ts for PUB), pure apart from
 * the injected settle call; the ordering is objects/shared/lanes.ts: one
 * lane per (subscription, partition), at most one Partition.settle call in
 * flight per lane; ACK/NACKs arriving meanwhile go together in the next
 * call, which the Partition commits in one transaction. Each operation
 * answers its own response slot (OK or ERR).
 */
import { encodeFrame } from "../../wire/mortar/codec";
import { ErrorCode, errFrame } from "../../wire/mortar/errors";
import { okFrame } from "../../wire/mortar/results";
import type { SettleResult } from "../partition/rpc";
import { Lanes } from "../shared/lanes";
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

const TEXT: Record<number, string> = {
  [ErrorCode.STALE_OWNERSHIP_EPOCH]: "ownership_epoch is older than the partition's: another member owns it now",
  [ErrorCode.NOT_OWNER]: "this subscription does not own the partition under that ownership_epoch",
  [ErrorCode.UNKNOWN_DELIVERY]: "no delivery in flight with this sequence and delivery_id (settled, expired or redelivered)",
  [ErrorCode.TOPIC_DELETED]: "the topic was deleted",
};

export class SettleLanes {
  private readonly lanes: Lanes<string, SettleOp & { subscriptionId: number; partition: number }>;

  constructor(private readonly host: SettleHost, private readonly deadlineMs = CALL_DEADLINE_MS) {
    this.lanes = new Lanes({
      issue: (_key, ops) => this.settle(ops),
      settled: () => this.host.answered(),
    });
  }

  /** Queues one operation; nothing is sent until flush(). */
  submit(subscriptionId: number, partition: number, op: SettleOp): void {
    this.lanes.submit(`${subscriptionId}/${partition}`, { ...op, subscriptionId, partition });
  }

  /** Sends the queued operations of every lane with no call in flight. */
  flush(): void {
    this.lanes.flush();
  }

  private settle(ops: (SettleOp & { subscriptionId: number; partition: number })[]): Promise<void> {
    const { subscriptionId, partition } = ops[0]!;
    return withDeadline(this.host.settle(subscriptionId, partition, ops), this.deadlineMs).then(
      (r) => ops.forEach((op, i) => this.answer(op, r.codes[i] ?? ErrorCode.INTERNAL_ERROR, "")),
      (e) => {
        const f = faultOf(e);
        for (const op of ops) this.answer(op, f.code, f.message);
      },
    );
  }

  private answer(op: SettleOp, code: number, message: string): void {
    this.host.respond(op.slot, encodeFrame(code === 0 ? okFrame(op.requestOp) : errFrame(code, op.requestOp, message || TEXT[code] || "")));
  }
}
