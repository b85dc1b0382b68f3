import { describe, expect, it } from "vitest";
import { ErrorCode, Op } from "../../../wire/mortar";
import { WsConn, connectFrame, expectErr, expectOk, pubFrame, pubResult } from "../helpers/mortar-ws";

describe("MortarMQ CONNECT with tokens configured", () => {
  it("an unknown token gets AUTH_FAILED and the connection closes (1008)", async () => {
    const c = await WsConn.open();
    c.send([connectFrame("wrong"), { op: Op.PING }]);
    expectErr((await c.take(1))[0], ErrorCode.AUTH_FAILED, Op.CONNECT);
    expect((await c.waitClosed()).code).toBe(1008);
    expect(c.frames).toEqual([]);
  });

  it("a missing token gets AUTH_FAILED", async () => {
    const c = await WsConn.open();
    c.send([connectFrame("")]);
    expectErr((await c.take(1))[0], ErrorCode.AUTH_FAILED, Op.CONNECT);
    await c.waitClosed();
  });

  it("tokens map to tenants that never see each other's topics", async () => {
    const acme = await WsConn.open();
    await acme.connect("test-token-acme");
    const beta = await WsConn.open();
    await beta.connect("test-token-beta");
    const a = await acme.declare("orders", 1);
    const b = await beta.declare("orders", 3); // same name, other tenant: its own topic
    expect(b.created).toBe(0);
    expect(b.partitionCount).toBe(3);
    acme.send([pubFrame(a.topicId, 0, "acme 1"), pubFrame(a.topicId, 0, "acme 2")]);
    expect((await acme.take(2)).map((f) => pubResult(f).sequence)).toEqual([1n, 2n]);
    beta.send([pubFrame(b.topicId, 2, "beta 1")]);
    expect(pubResult((await beta.take(1))[0]).sequence).toBe(1n);
    beta.send([{ op: Op.PING }]);
    expectOk((await beta.take(1))[0], Op.PING);
    acme.close();
    beta.close();
  });
});
