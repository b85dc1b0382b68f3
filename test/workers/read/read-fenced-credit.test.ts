/**
 * A fenced ACK/NACK changes nothing (#14 item 2, docs/protocol.md): one
 * whose ownership_epoch is stale or was never issued is answered ERR by the
 * Partition, and the session does not return its credit — so no record
 * beyond the window is pushed.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, NackReason, Op, type Frame } from "../../../wire/mortar";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult } from "../../../objects/registry/rpc";
import { expectErr, expectOk, pubFrame } from "../helpers/mortar-ws";
import { Peer, isAssign, isMsg, text } from "../helpers/peer";

const unique = (base: string) => `${base}-${Math.random().toString(36).slice(2, 10)}`;

describe("fenced settlements keep their credit", () => {
  it("credit_count 1: ACK/NACK with a stale or never-issued ownership epoch are refused and push nothing; the right ACK does", async () => {
    const p = await Peer.open();
    const d = await p.c.declare(unique("fc"), 1);
    const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
    if (!r.ok) throw new Error("lookup");
    await p.subscribe(d.topicId, "g", { creditCount: 1 });
    await p.confirm(await p.take(isAssign, 1));
    p.send([pubFrame(d.topicId, 0, "a"), pubFrame(d.topicId, 0, "b"), pubFrame(d.topicId, 0, "c")]);
    await p.answer(3);
    const [a] = await p.take(isMsg);
    expect([text(a!), a!.ownershipEpoch]).toEqual(["a", 1n]);
    expectErr(await p.request({ ...p.ackFrame(a!), ownershipEpoch: 0n } as Frame), ErrorCode.STALE_OWNERSHIP_EPOCH, Op.ACK);
    expectErr(await p.request({ ...p.ackFrame(a!), ownershipEpoch: 7n } as Frame), ErrorCode.NOT_OWNER, Op.ACK);
    expectErr(await p.request({ ...p.nackFrame(a!, NackReason.RETRY), ownershipEpoch: 7n } as Frame), ErrorCode.NOT_OWNER, Op.NACK);
    expect(await p.peek(isMsg, 400)).toEqual([]); // the window is still full
    expectOk(await p.request(p.ackFrame(a!)), Op.ACK);
    const [b] = await p.take(isMsg);
    expect(text(b!)).toBe("b");
    expect(await p.peek(isMsg, 300)).toEqual([]);
    expectOk(await p.request(p.ackFrame(b!)), Op.ACK);
    expect((await p.take(isMsg)).map(text)).toEqual(["c"]);
    p.close();
  });
});
