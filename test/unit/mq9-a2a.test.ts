import { describe, expect, it } from "vitest";
import { a2aEventKey, newReceiverToken, parseA2aNotification, parseMq9Subject, receiverTokenTenant } from "../../wire/mq9";

describe("A2A receiver tokens (wire/mq9/a2a.ts)", () => {
  it("name their tenant and are refused when malformed", () => {
    const t = newReceiverToken("acme-1");
    expect(receiverTokenTenant(t)).toBe("acme-1");
    expect(newReceiverToken("acme-1")).not.toBe(t);
    expect(receiverTokenTenant(t.slice(0, -1))).toBeNull();
    expect(receiverTokenTenant("mq9_" + t.slice(4))).toBeNull();
    expect(receiverTokenTenant("a2a__" + "A".repeat(43))).toBeNull();
    // a tenant part that is no tenant id (upper case, a dot, NUL, 65 chars) is refused before any object is asked
    for (const name of ["Acme", "a.b", "a\u0000b", "x".repeat(65), "../acme"]) expect(receiverTokenTenant(newReceiverToken(name))).toBeNull();
    expect(receiverTokenTenant(newReceiverToken("x".repeat(64)))).toBe("x".repeat(64));
  });
});

describe("A2A notifications", () => {
  it("reads the kind and task id of v1 and v0.3 bodies, and refuses others", () => {
    expect(parseA2aNotification({ statusUpdate: { taskId: "t1", status: {} } })).toEqual({ kind: "status-update", taskId: "t1" });
    expect(parseA2aNotification({ task: { id: "t2" } })).toEqual({ kind: "task", taskId: "t2" });
    expect(parseA2aNotification({ artifactUpdate: { taskId: "t3" } })).toEqual({ kind: "artifact-update", taskId: "t3" });
    expect(parseA2aNotification({ kind: "status-update", taskId: "t4" })).toEqual({ kind: "status-update", taskId: "t4" });
    expect(parseA2aNotification({ statusUpdate: { status: {} } })).toBeNull();
    expect(parseA2aNotification([])).toBeNull();
    expect(parseA2aNotification({ other: 1 })).toBeNull();
  });

  it("keys the same body of a task alike and different events apart", async () => {
    const a = new TextEncoder().encode('{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING","timestamp":"1"}}}');
    const b = new TextEncoder().encode('{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING","timestamp":"2"}}}');
    expect(await a2aEventKey("t", a)).toBe(await a2aEventKey("t", a));
    expect(await a2aEventKey("t", a)).not.toBe(await a2aEventKey("t", b));
    expect(await a2aEventKey("t", a)).toMatch(/^a2a:[0-9a-f]{64}$/);
  });

  it("parses the receiver subjects", () => {
    expect(parseMq9Subject("$mq9.AI.A2A.RECEIVER.CREATE.box.1")).toEqual({ kind: "A2A.RECEIVER.CREATE", mailAddress: "box.1" });
    expect(parseMq9Subject("$mq9.AI.A2A.RECEIVER.DELETE.box.1")).toEqual({ kind: "A2A.RECEIVER.DELETE", mailAddress: "box.1" });
    expect(() => parseMq9Subject("$mq9.AI.A2A.RECEIVER.LIST.box.1")).toThrow();
  });
});
