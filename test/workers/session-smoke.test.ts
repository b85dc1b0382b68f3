import { describe, expect, it } from "vitest";
import { Op } from "../../wire/mortar";
import { WsConn, pubFrame, pubResult } from "./helpers/mortar-ws";

describe("smoke", () => {
  it("connect, declare, pub", async () => {
    const c = await WsConn.open(); console.log("opened");
    await c.connect(); console.log("connected");
    const d = await c.declare("smoke", 2);
    expect(d.topicId).toBe(1);
    c.send([pubFrame(d.topicId, 0, "hello"), pubFrame(d.topicId, 1, "world"), pubFrame(d.topicId, 0, "again")]);
    const fs = await c.take(3);
    expect(fs.map((f) => pubResult(f).sequence)).toEqual([1n, 1n, 2n]);
    c.close();
    expect(Op.PUB).toBe(3);
  });
});
