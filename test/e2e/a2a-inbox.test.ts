/**
 * A2A inbox end to end (issue 32 §1, docs/a2a.md): the real @a2a-js/sdk
 * push-notification sender (DefaultPushNotificationSender with the SDK's
 * in-memory config store) POSTs a task's updates to a mailbox's receiver on
 * the local broker; the mq9 client reads them back.
 */
import { DefaultPushNotificationSender, InMemoryPushNotificationStore, ServerCallContext } from "@a2a-js/sdk/server";
import { TaskState } from "@a2a-js/sdk";
import { Mq9Client } from "@mortarmq/mq9";
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";

const ctx = useLocalBroker("a2a", {});

function statusUpdate(taskId: string, state: TaskState, at: string) {
  return {
    payload: {
      $case: "statusUpdate" as const,
      value: { taskId, contextId: "ctx-1", status: { state, message: undefined, timestamp: at }, metadata: undefined },
    },
  };
}

describe("A2A push notifications into a mailbox", () => {
  it("stores the SDK sender's updates in order, once each; a wrong token is 401 with nothing stored", async () => {
    const client = await Mq9Client.connect(ctx.broker.url);
    const { mailAddress } = await client.createMailbox({ name: `a2a.inbox.${Date.now().toString(36)}` });
    const config = await client.a2aPushConfig(mailAddress, { baseUrl: ctx.broker.url });
    expect(config.url).toBe(`${ctx.broker.url}/a2a/push/${mailAddress}`);

    const store = new InMemoryPushNotificationStore();
    const call = new ServerCallContext();
    const taskId = "task-1";
    await store.save(taskId, call, { tenant: "", id: "cfg", taskId, url: config.url, token: config.token, authentication: undefined } as never);
    const sender = new DefaultPushNotificationSender(store);
    const states = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED];
    const events = states.map((s, i) => statusUpdate(taskId, s, `2026-01-01T00:00:0${i}Z`));
    for (const e of events) await sender.send(e as never, call);
    await sender.send(events[1] as never, call); // a replay of an earlier event

    const stored = await client.query(mailAddress, { tags: ["a2a"] });
    const timestamps = [...stored].sort((a, b) => a.msgId - b.msgId).map((m) => (m.json() as any).statusUpdate.status.timestamp); // in msg_id order: the replay neither duplicated nor moved
    expect(timestamps).toEqual(events.map((e) => e.payload.value.status.timestamp));
    expect(stored.every((m) => m.correlationId === taskId && m.tags.includes("a2a.status-update"))).toBe(true);

    const updates = [];
    const ac = new AbortController();
    for await (const u of client.a2aUpdates(mailAddress, { signal: ac.signal })) {
      updates.push(u);
      if (updates.length === events.length) ac.abort();
    }
    expect(updates.map((u) => (u.body as any).statusUpdate.status.timestamp)).toEqual(events.map((e) => e.payload.value.status.timestamp));
    expect(updates.map((u) => u.kind)).toEqual(events.map(() => "status-update"));

    const body = JSON.stringify({ statusUpdate: { taskId, contextId: "c", status: { state: "TASK_STATE_FAILED" } } });
    const wrong = await fetch(config.url, { method: "POST", body, headers: { "Content-Type": "application/json", "X-A2A-Notification-Token": config.token.slice(0, -2) + "AA" } });
    expect(wrong.status).toBe(401);
    const none = await fetch(config.url, { method: "POST", body, headers: { "Content-Type": "application/json" } });
    expect(none.status).toBe(401);
    const unknown = await fetch(`${ctx.broker.url}/a2a/push/no.such.box`, { method: "POST", body, headers: { "X-A2A-Notification-Token": config.token } });
    expect(unknown.status).toBe(404);
    expect((await client.query(mailAddress, { tags: ["a2a"] })).length).toBe(events.length);

    await client.deleteA2aReceiver(mailAddress);
    const deleted = await fetch(config.url, { method: "POST", body, headers: { "X-A2A-Notification-Token": config.token } });
    expect(deleted.status).toBe(401);
    expect((await client.query(mailAddress, { tags: ["a2a"] })).length).toBe(events.length);
    await expect(client.a2aPushConfig("no.such.box", { baseUrl: ctx.broker.url })).rejects.toMatchObject({ kind: "mailbox_not_found" });
    await client.close();
  });
});
