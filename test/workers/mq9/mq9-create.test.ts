import { describe, expect, it } from "vitest";
import { createMailbox, freshAddress, mq9, query, send } from "../helpers/mq9";

// Every example of the spec's mail_address table / full-address list (valid), and every invalid one.
const SPEC_VALID = [
  "task.001", "agent.inbox", "analytics.result", "acme.org.task.queue", "session.20260502",
  "acme.task.queue", "order.processing.urgent", "agent.001.inbox",
];
const SPEC_INVALID = ["task-001", "task_001", "Task.001", ".task.001", "task.001.", "task..001"];

describe("MAILBOX.CREATE", () => {
  it.each(SPEC_VALID)("creates spec-valid address %s", async (name) => {
    const r = await mq9("$mq9.AI.MAILBOX.CREATE", { name, ttl: 0 });
    // The same name may exist from a previous run only inside this test's storage; first create must succeed.
    expect(r).toEqual({ status: 200, body: { error: "", mail_address: name } });
  });

  it.each(SPEC_INVALID)("rejects spec-invalid address %s", async (name) => {
    const r = await mq9("$mq9.AI.MAILBOX.CREATE", { name });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(`invalid mail_address "${name}"`);
    expect(r.body.mail_address).toBe("");
  });

  it.each(SPEC_INVALID)("rejects spec-invalid address %s in a subject", async (name) => {
    const r = await mq9(`$mq9.AI.MSG.SEND.${name}`, "x");
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("invalid mail_address");
  });

  it("refuses a duplicate with the spec's error", async () => {
    const name = await createMailbox();
    const r = await mq9("$mq9.AI.MAILBOX.CREATE", { name });
    expect(r).toEqual({ status: 409, body: { error: `mailbox ${name} already exists`, mail_address: "" } });
  });

  it("generates an unguessable valid address when no name is given", async () => {
    const a = await mq9("$mq9.AI.MAILBOX.CREATE", {});
    const b = await mq9("$mq9.AI.MAILBOX.CREATE", "");
    for (const r of [a, b]) {
      expect(r.status).toBe(200);
      expect(r.body.mail_address).toMatch(/^mq9\.[0-9a-f]{40}$/);
    }
    expect(a.body.mail_address).not.toBe(b.body.mail_address);
    expect(await send(a.body.mail_address as string, "hi")).toBe(0);
  });

  it("rejects bad bodies", async () => {
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { ttl: -5 })).status).toBe(400);
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", "{not json")).body).toMatchObject({ mail_address: "" });
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: 7 })).status).toBe(400);
  });

  it("answers every subject of a missing mailbox with the spec's error", async () => {
    const name = freshAddress();
    const expected = { status: 404, body: { error: `mailbox ${name} does not exist` } };
    expect(await mq9(`$mq9.AI.MSG.SEND.${name}`, "x")).toEqual(expected);
    expect(await mq9(`$mq9.AI.MSG.FETCH.${name}`, {})).toEqual(expected);
    expect(await mq9(`$mq9.AI.MSG.QUERY.${name}`, {})).toEqual(expected);
    expect(await mq9(`$mq9.AI.MSG.DELETE.${name}.0`)).toEqual(expected);
    expect(await mq9(`$mq9.AI.MSG.ACK.${name}`, { group_name: "g", mail_address: name, msg_id: 0 })).toEqual(expected);
    await createMailbox(name);
    expect(await query(name)).toEqual([]);
  });
});
