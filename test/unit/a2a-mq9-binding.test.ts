/** A2A over mq9, its pure parts (client/mq9/a2a-sdk/): the message layout of the binding and which requests an agent may acknowledge. */
import { describe, expect, it } from "vitest";
import { decodeBindingMessage, encodeBindingMessage, mailboxOfInterfaceUrl, serviceParameter, serviceParametersOf } from "../../client/mq9/a2a-sdk/binding";
import { AckTracker } from "../../client/mq9/a2a-sdk/ack-tracker";

const td = new TextDecoder();

describe("the mq9 binding's messages", () => {
  it("a request is the JSON-RPC object with the service parameters as one extra member, and back", () => {
    const rpc = '{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{}},"id":1}';
    const bytes = encodeBindingMessage(rpc, { "A2A-Version": "1.0", "A2A-Extensions": "urn:a,urn:b" });
    expect(JSON.parse(td.decode(bytes))).toEqual({ ...JSON.parse(rpc), serviceParameters: { "A2A-Version": "1.0", "A2A-Extensions": "urn:a,urn:b" } });
    expect(decodeBindingMessage(bytes)).toEqual({ rpc: JSON.parse(rpc), serviceParameters: { "A2A-Version": "1.0", "A2A-Extensions": "urn:a,urn:b" } });
    expect(td.decode(encodeBindingMessage({ jsonrpc: "2.0", id: 1, result: {} }))).toBe('{"jsonrpc":"2.0","id":1,"result":{}}'); // none: no member
  });

  it("an empty end marker or a payload that is not a JSON object decodes to null; non-string parameters are dropped", () => {
    expect(decodeBindingMessage(new Uint8Array(0))).toBeNull();
    expect(decodeBindingMessage(new TextEncoder().encode("[1]"))).toBeNull();
    expect(decodeBindingMessage(new TextEncoder().encode('{"id":1,"serviceParameters":{"a":1,"b":"x"}}'))).toEqual({ rpc: { id: 1 }, serviceParameters: { b: "x" } });
  });

  it("service parameters from the SDK transport's request headers, without the HTTP ones; looked up in any case", () => {
    const sp = serviceParametersOf({ "Content-Type": "application/json", Accept: "text/event-stream", "A2A-Version": "1.0", "a2a-extensions": "urn:x" });
    expect(sp).toEqual({ "A2A-Version": "1.0", "A2A-Extensions": "urn:x" });
    expect(serviceParameter({ "a2a-version": "1.0" }, "A2A-Version")).toBe("1.0");
    expect(serviceParameter({}, "A2A-Version")).toBeUndefined();
  });

  it("an interface URL names the mailbox: mq9://<host>/<address> or the bare address", () => {
    expect(mailboxOfInterfaceUrl("mq9://broker.example.com/agent.inbox")).toBe("agent.inbox");
    expect(mailboxOfInterfaceUrl(" agent.inbox ")).toBe("agent.inbox");
  });
});

describe("AckTracker: an agent acknowledges only a fully answered prefix (ACK is cumulative)", () => {
  it("a request done before an earlier one still running is not acknowledged until that one is", () => {
    const t = new AckTracker();
    for (const id of [3, 4, 7]) t.start(id);
    expect(t.highestSeen).toBe(7);
    expect(t.done(4)).toBeNull(); // 3 still runs: acknowledging 4 would acknowledge 3 too
    expect(t.done(3)).toBe(4);
    t.acked(4);
    expect([t.has(3), t.has(4), t.has(7), t.size]).toEqual([false, false, true, 1]);
    expect(t.done(7)).toBe(7);
    t.acked(7);
    expect(t.size).toBe(0);
  });
});
