/**
 * Group commit for PUB (DESIGN.md §3 "Batch"), pure apart from the injected
 * append call; the ordering is objects/shared/lanes.ts.
 *
 * Accepted PUBs are queued per partition ("lane"). A lane has at most ONE
 * append call in flight; PUBs arriving meanwhile accumulate and go together
 * in the next call, which the Partition commits in one transaction. So
 * consecutive PUBs that arrive together become one RPC, and under load the
 * batch size grows with the arrival rate. Answers go to the response slots
 * reserved when the frames arrived, so response order is kept across lanes.
 *
 * The batch carries each PUB's frame exactly as the client sent it (the
 * bytes the session's decoder read, objects/partition/batch.ts format): the
 * Partition decodes it once; nothing is re-encoded on the way.
 *
 * Admission: each PUB may wait for the tenant's quotas (a rate lease,
 * objects/tenants/gate.ts) inside its lane; the PUBs behind it on that
 * partition wait too, a refused one is answered QUOTA_EXCEEDED.
 *
 * Several lanes (a topic with several partitions): an idle lane sends its
 * queued PUBs at once only when they are on the critical path — its oldest
 * queued slot is older than every call in flight on other lanes — or when
 * no call is in flight. Otherwise its answers could not be written before
 * that older call answers anyway (strict request order), so it waits for the
 * next completion. Without this, a pipelining client that refills one PUB
 * per answer gets its answers released one at a time and the lanes fall
 * out of step: every partition commits batches of ~1 PUB, and where the
 * partitions share a thread (wrangler dev: one workerd thread for every
 * object) each commit costs a full round (measured on 4 partitions with 256
 * in flight: 3.5k msg/s, p50 70 ms, instead of ~40k msg/s).
 */
import { Op } from "../../wire/mortar/constants";
import { encodeFrame } from "../../wire/mortar/codec";
import { ErrorCode, errFrame } from "../../wire/mortar/errors";
import { encodePubResult, okFrame } from "../../wire/mortar/results";
import { PubResultFlags } from "../../wire/mortar/constants";
import { PubBatchBuilder } from "../partition/batch";
import { AppendStatus, type AppendResult } from "../partition/rpc";
import { refusalText } from "../partition/refusal";
import type { TopicInfo } from "../registry/rpc";
import type { Refusal } from "../tenants/gate";
import { Lanes } from "../shared/lanes";
import { faultOf, withDeadline, CALL_DEADLINE_MS } from "./faults";

/** Largest batch sent in one call, bytes of frames (a bigger PUB still goes alone). */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** What the pipeline needs from its Session. */
export interface PipelineHost {
  /** Sends one packed batch to partition `partition` of `topic`. */
  append(topic: TopicInfo, partition: number, batch: Uint8Array): Promise<AppendResult>;
  /** Answers response slot `slot` with one encoded frame. */
  respond(slot: number, frame: Uint8Array): void;
  /** Called after answers were filled outside a flush (the Session writes what is ready). */
  answered(): void;
}

/** One accepted PUB. */
interface Pub {
  topic: TopicInfo;
  partition: number;
  /** The frame as received: op byte + payload (the length prefix is rebuilt from its size). */
  body: Uint8Array;
  slot: number;
}

export class PubPipeline {
  private readonly lanes: Lanes<number | string, Pub, Refusal>;
  private readonly spare: PubBatchBuilder[] = [];

  constructor(private readonly host: PipelineHost, private readonly deadlineMs = CALL_DEADLINE_MS) {
    this.lanes = new Lanes<number | string, Pub, Refusal>({
      issue: (_key, batch) => this.append(batch),
      refused: (pub, r) => {
        // QUOTA_EXCEEDED 0x4002 (rate or storage; the message says which)
        this.host.respond(pub.slot, encodeFrame(errFrame(ErrorCode.QUOTA_EXCEEDED, Op.PUB, r.message)));
        this.host.answered();
      },
      settled: () => this.host.answered(),
    }, {
      weight: (pub) => 4 + pub.body.length,
      maxWeight: MAX_BATCH_BYTES,
      order: (pub) => pub.slot,
    });
  }

  /**
   * Queues an accepted PUB (already validated against `topic`) for
   * `partition`. `body`: its frame's op byte and payload as received.
   * `admission`: the tenant's quota check (null = admitted), awaited in the
   * lane. Nothing is sent until flush() (or, for a PUB with an admission,
   * the lanes' own flush after it was admitted).
   */
  submit(topic: TopicInfo, partition: number, body: Uint8Array, slot: number, admission?: Promise<Refusal | null>): void {
    this.lanes.submit(laneKey(topic.incarnation, topic.topicId, partition), { topic, partition, body, slot }, admission);
  }

  /**
   * Sends the next batch of every idle lane with queued PUBs that is on the
   * critical path (see the module comment); the others wait for a completion.
   */
  flush(): void {
    this.lanes.flush();
  }

  /** Lanes with a call in flight or queued PUBs. */
  get activeLanes(): number {
    return this.lanes.active;
  }

  private append(batch: Pub[]): Promise<void> {
    const { topic, partition } = batch[0]!;
    const builder = this.spare.pop() ?? new PubBatchBuilder();
    for (const p of batch) builder.addFrameBody(p.body);
    const bytes = builder.finish();
    builder.reset();
    if (this.spare.length < 4) this.spare.push(builder);
    const slots = batch.map((p) => p.slot);
    return withDeadline(this.host.append(topic, partition, bytes), this.deadlineMs).then(
      (res) => this.answer(slots, res),
      (e) => {
        const f = faultOf(e);
        this.fail(slots, f.code, f.message);
      },
    );
  }

  private answer(slots: number[], res: AppendResult): void {
    if (res.error || res.status.length !== slots.length) {
      const e = res.error ?? { code: ErrorCode.INTERNAL_ERROR, message: `partition answered ${res.status.length} of ${slots.length} records` };
      this.fail(slots, e.code, e.message);
      return;
    }
    const epoch = BigInt(res.leaderEpoch);
    const commit = BigInt(res.commitSeq);
    for (let i = 0; i < slots.length; i++) {
      const st = res.status[i];
      if (st === AppendStatus.REJECTED) {
        this.host.respond(slots[i]!, encodeFrame(errFrame(res.codes[i]!, Op.PUB, refusalText(res.codes[i]!))));
        continue;
      }
      const result = encodePubResult({
        sequence: BigInt(res.sequences[i]!),
        durability: res.durability,
        leaderEpoch: epoch,
        commitSeq: commit,
        resultFlags: st === AppendStatus.DUPLICATE ? PubResultFlags.DEDUPLICATED : 0,
      });
      this.host.respond(slots[i]!, encodeFrame(okFrame(Op.PUB, result)));
    }
  }

  private fail(slots: number[], code: number, message: string): void {
    const frame = encodeFrame(errFrame(code, Op.PUB, message));
    for (const s of slots) this.host.respond(s, frame);
  }
}


/** One lane per (incarnation, topic_id, partition): a number while it fits exactly, else a string. */
function laneKey(incarnation: number, topicId: number, partition: number): number | string {
  return incarnation < 0x200000 ? (incarnation * 0x10000 + topicId) * 0x10000 + partition : `${incarnation}/${topicId}/${partition}`;
}
