import { describe, expect, it, vi } from "vitest";
import { ErrorCode, FrameDecoder, Op, decodePubResult, encodeFrame, type Frame, type PubFrame } from "../../wire/mortar";
import { PubPipeline, type PipelineHost } from "../../objects/session/pub-pipeline";
import { readPubBatch } from "../../objects/partition/batch";
import { AppendStatus, type AppendResult } from "../../objects/partition/rpc";
import type { TopicInfo } from "../../objects/registry/rpc";

const topic: TopicInfo = { topicId: 1, name: "t", partitionCount: 4, incarnation: 3, dlq: false, createdAt: 0 };
const pub = (partition: number, v: string, producerSeq = 0n): PubFrame => ({
  op: Op.PUB, topicId: 1, partition, producerId: producerSeq ? 9n : 0n, producerSeq, flags: 0,
  key: new Uint8Array(0), value: new TextEncoder().encode(v),
});

/** A host whose append calls are answered by the test, one by one. */
class ScriptedHost implements PipelineHost {
  calls: { partition: number; batch: Uint8Array; records: PubFrame[]; resolve: (r: AppendResult) => void; reject: (e: unknown) => void }[] = [];
  answers = new Map<number, Frame>();
  answeredCount = 0;
  append(t: TopicInfo, partition: number, batch: Uint8Array): Promise<AppendResult> {
    expect(t).toBe(topic);
    return new Promise((resolve, reject) => this.calls.push({ partition, batch, records: readPubBatch(batch), resolve, reject }));
  }
  respond(slot: number, frame: Uint8Array): void {
    const { frames } = new FrameDecoder().push(frame);
    this.answers.set(slot, frames[0]);
  }
  answered(): void {
    this.answeredCount++;
  }
}

function ok(n: number, first: number, patch: Partial<AppendResult> = {}): AppendResult {
  return {
    leaderEpoch: 2, commitSeq: first + n - 1, durability: 1,
    status: new Uint8Array(n), sequences: Float64Array.from({ length: n }, (_, i) => first + i), codes: new Uint16Array(n), ...patch,
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** Submits `f` as the session does: its frame body exactly as received (op byte + payload). */
function submit(p: PubPipeline, f: PubFrame, slot: number, admission?: Promise<{ kind: "rate"; message: string; retryAfterMs: number } | null>): void {
  p.submit(topic, f.partition, encodeFrame(f).subarray(4), slot, admission);
}

describe("PubPipeline (group commit)", () => {
  it("several partitions: an idle lane waits while an older call is in flight on another lane, so the lanes stay in step", async () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    const parts = () => host.calls.map((c) => `${c.partition}:${c.records.length}`);
    submit(p, pub(0, "a"), 0);
    submit(p, pub(1, "b"), 1);
    p.flush();
    expect(parts()).toEqual(["0:1", "1:1"]); // nothing in flight: every lane goes
    host.calls[0].resolve(ok(1, 1)); // lane 0 done; slot 0 answered, slot 1 (lane 1) still in flight
    await tick();
    submit(p, pub(0, "c"), 2); // newer than lane 1's call: its answer must wait for slot 1 anyway
    submit(p, pub(0, "d"), 3);
    p.flush();
    expect(parts()).toEqual(["0:1", "1:1"]);
    host.calls[1].resolve(ok(1, 1));
    await tick();
    expect(parts()).toEqual(["0:1", "1:1", "0:2"]); // the completion sends it, as one batch
    submit(p, pub(1, "e"), 4); // newer than lane 0's call in flight (slots 2, 3): waits
    p.flush();
    expect(parts()).toEqual(["0:1", "1:1", "0:2"]);
    host.calls[2].resolve(ok(2, 2));
    await tick();
    expect(parts()).toEqual(["0:1", "1:1", "0:2", "1:1"]);
    submit(p, pub(0, "f"), 5);
    p.flush();
    expect(parts()).toEqual(["0:1", "1:1", "0:2", "1:1"]); // slot 5 is newer than lane 1's slot 4 in flight
    host.calls[3].resolve(ok(1, 2));
    await tick();
    expect(parts()).toEqual(["0:1", "1:1", "0:2", "1:1", "0:1"]);
    host.calls[4].resolve(ok(1, 4));
    await tick();
    expect(p.activeLanes).toBe(0);
    expect([...host.answers.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("sends PUBs that arrive while a call is in flight together in the next call", async () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    submit(p, pub(0, "a"), 0);
    p.flush();
    submit(p, pub(0, "b"), 1);
    submit(p, pub(0, "c"), 2);
    p.flush(); // lane busy: nothing sent
    expect(host.calls.length).toBe(1);
    expect(host.calls[0].records.map((r) => new TextDecoder().decode(r.value))).toEqual(["a"]);
    host.calls[0].resolve(ok(1, 1));
    await tick();
    expect(host.calls.length).toBe(2);
    expect(host.calls[1].records.map((r) => new TextDecoder().decode(r.value))).toEqual(["b", "c"]);
    host.calls[1].resolve(ok(2, 2));
    await tick();
    expect([0, 1, 2].map((s) => decodePubResult((host.answers.get(s) as { result: Uint8Array }).result).sequence)).toEqual([1n, 2n, 3n]);
    expect(p.activeLanes).toBe(0);
  });

  it("keeps one call in flight per partition, partitions in parallel", () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    submit(p, pub(0, "a"), 0);
    submit(p, pub(1, "b"), 1);
    submit(p, pub(0, "c"), 2);
    p.flush();
    expect(host.calls.map((c) => [c.partition, c.records.length])).toEqual([[0, 2], [1, 1]]);
  });

  it("answers duplicates with the dedupe flag and rejected records with their code", async () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    for (let i = 0; i < 3; i++) submit(p, pub(0, "x", BigInt(i + 1)), i);
    p.flush();
    host.calls[0].resolve(ok(3, 10, {
      status: Uint8Array.of(AppendStatus.APPENDED, AppendStatus.DUPLICATE, AppendStatus.REJECTED),
      sequences: Float64Array.of(10, 4, 0),
      codes: Uint16Array.of(0, 0, ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW),
    }));
    await tick();
    const r0 = decodePubResult((host.answers.get(0) as { result: Uint8Array }).result);
    const r1 = decodePubResult((host.answers.get(1) as { result: Uint8Array }).result);
    expect([r0.sequence, r0.resultFlags, r0.leaderEpoch, r0.commitSeq, r0.durability]).toEqual([10n, 0, 2n, 12n, 1]);
    expect([r1.sequence, r1.resultFlags]).toEqual([4n, 1]);
    expect(host.answers.get(2)).toMatchObject({ op: Op.ERR, code: ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW, requestOp: Op.PUB });
  });

  it("maps a failed call onto every PUB of the batch and carries on with the next batch", async () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    submit(p, pub(0, "a"), 0);
    submit(p, pub(0, "b"), 1);
    p.flush();
    submit(p, pub(0, "c"), 2);
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    host.calls[0].reject(Object.assign(new Error("too busy"), { overloaded: true }));
    await tick();
    expect(warned.mock.calls.map((c) => c[0])).toEqual(["MortarSession: overloaded: too busy"]); // logged once for the batch, not sent
    warned.mockRestore();
    expect(host.answers.get(0)).toMatchObject({ op: Op.ERR, code: ErrorCode.BACKPRESSURE });
    expect(host.answers.get(1)).toMatchObject({ op: Op.ERR, code: ErrorCode.BACKPRESSURE });
    expect(host.calls.length).toBe(2);
    host.calls[1].resolve(ok(1, 1, { error: { code: ErrorCode.TOPIC_DELETED, message: "gone" } }));
    await tick();
    expect(host.answers.get(2)).toMatchObject({ op: Op.ERR, code: ErrorCode.TOPIC_DELETED });
  });

  it("answers ELECTION_TIMEOUT when the partition does not answer in time", async () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host, 20);
    submit(p, pub(2, "a"), 0);
    p.flush();
    await new Promise((r) => setTimeout(r, 60));
    expect(host.answers.get(0)).toMatchObject({ op: Op.ERR, code: ErrorCode.ELECTION_TIMEOUT });
    host.calls[0].resolve(ok(1, 1)); // a late answer changes nothing
    await tick();
    expect(host.answers.get(0)).toMatchObject({ op: Op.ERR, code: ErrorCode.ELECTION_TIMEOUT });
  });

  it("forwards each PUB's frame bytes exactly as received, back to back", () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    // a frame encoded elsewhere (the client), and one whose body is a view inside a larger received chunk
    const frames = [pub(0, "first", 1n), pub(0, "second", 2n)].map((f) => encodeFrame(f));
    const chunk = new Uint8Array(frames[0].length + frames[1].length + 3);
    chunk.set(frames[0], 1);
    chunk.set(frames[1], 1 + frames[0].length);
    p.submit(topic, 0, chunk.subarray(5, 1 + frames[0].length), 0);
    p.submit(topic, 0, chunk.subarray(5 + frames[0].length, 1 + frames[0].length + frames[1].length), 1);
    p.flush();
    expect([...host.calls[0].batch]).toEqual([...frames[0], ...frames[1]]);
  });

  it("admission: a PUB waiting for its quota holds up its partition's later PUBs only; a refused one is answered QUOTA_EXCEEDED and never sent", async () => {
    const host = new ScriptedHost();
    const p = new PubPipeline(host);
    let grant!: (v: null) => void;
    const lease = new Promise<null>((r) => (grant = r));
    const refusal = { kind: "rate" as const, message: "publish rate limit exceeded (1 msg/s); nothing was stored, retry later", retryAfterMs: 900 };
    submit(p, pub(0, "waits"), 0, lease);
    submit(p, pub(0, "behind"), 1, Promise.resolve(null));
    submit(p, pub(1, "other partition"), 2, Promise.resolve(null));
    submit(p, pub(1, "refused"), 3, Promise.resolve(refusal));
    p.flush();
    expect(host.calls).toEqual([]); // nothing is sent before its admission settled
    await tick();
    expect(host.calls.map((c) => [c.partition, c.records.map((r) => new TextDecoder().decode(r.value))])).toEqual([[1, ["other partition"]]]);
    expect(host.answers.get(3)).toMatchObject({ op: Op.ERR, code: ErrorCode.QUOTA_EXCEEDED, requestOp: Op.PUB });
    expect(new TextDecoder().decode((host.answers.get(3) as { message: Uint8Array }).message)).toBe(refusal.message);
    grant(null);
    await tick();
    expect(host.calls.map((c) => [c.partition, c.records.map((r) => new TextDecoder().decode(r.value))])).toEqual([
      [1, ["other partition"]], [0, ["waits", "behind"]], // admitted together: one batch, in order
    ]);
  });
});
