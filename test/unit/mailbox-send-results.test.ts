import { describe, expect, it } from "vitest";
import { packSendResult, unpackSendResult, type SendResult } from "../../objects/mailbox/rpc";

describe("sendMany's packed results", () => {
  it("a success crosses as its msg_id, anything else as itself; unpacking gives back the SendResult", () => {
    const rs: SendResult[] = [{ ok: true, msgId: 0 }, { ok: true, msgId: -1 }, { ok: false, code: "mailbox_not_found", error: "mailbox x does not exist" }];
    const packed = rs.map(packSendResult);
    expect(packed).toEqual([0, -1, rs[2]]);
    expect(packed.map(unpackSendResult)).toEqual(rs);
  });
});
