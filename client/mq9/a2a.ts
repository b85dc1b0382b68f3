/**
 * The A2A push-notification inbox from the client side (docs/a2a.md):
 * a mailbox's push config to hand to any A2A server, and its task updates
 * as an async iterator.
 */
import type { Mq9Message } from "./message";
import type { Mq9Consumer } from "./consume";
import type { ConsumeOptions } from "./consume";

/**
 * What `$mq9.AI.A2A.RECEIVER.CREATE` gives: the A2A 1.0 `PushNotificationConfig`
 * fields `url` and `token` (the A2A SDK's sender puts `token` in
 * `X-A2A-Notification-Token`). Pass it as `TaskPushNotificationConfig`
 * (with `taskId`) or as the `pushNotificationConfig` of a SendMessage request.
 */
export interface A2aPushConfig {
  url: string;
  token: string;
}

/** One task update read from the mailbox. */
export interface A2aUpdate {
  /** `task`, `status-update`, `artifact-update` or `message` (the message's tag `a2a.<kind>`). */
  kind: string;
  /** The task id (the message's correlation_id). */
  taskId: string;
  /** The notification body as the A2A server sent it (a `StreamResponse`). */
  body: unknown;
  /** The mailbox message (ack() it when the group should move past it; a2aUpdates acks itself). */
  message: Mq9Message;
}

/** The update a mailbox message holds, or null when it is not an A2A notification (no `a2a` tag). */
export function a2aUpdateOf(m: Mq9Message): A2aUpdate | null {
  if (!m.tags.includes("a2a") || m.correlationId === null) return null;
  const kind = m.tags.find((t) => t.startsWith("a2a."))?.slice(4) ?? "";
  return { kind, taskId: m.correlationId, body: m.json(), message: m };
}

/**
 * Task updates of a consumer, in mailbox order: skips (and acks) messages
 * that are not A2A notifications, acks each update once the loop asks for
 * the next one. Ends with the consumer.
 */
export async function* a2aUpdatesOf(consumer: Mq9Consumer): AsyncGenerator<A2aUpdate> {
  for await (const m of consumer) {
    const u = a2aUpdateOf(m);
    if (u) yield u;
    await m.ack();
  }
}

/** Options of `Mq9Client.a2aUpdates`: the consume options (group defaults to `a2a`). */
export type A2aUpdatesOptions = Partial<ConsumeOptions>;
