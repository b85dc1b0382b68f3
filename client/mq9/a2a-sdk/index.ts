/**
 * `@mortarmq/mq9/a2a`: A2A with the `@a2a-js/sdk` (an optional peer
 * dependency) over mq9 — a client transport and a server adapter for the
 * binding {@link MQ9_A2A_BINDING}, and a push-notification sender that
 * retries (docs/a2a.md).
 */
export { MQ9_A2A_BINDING, A2A_END_TAG, A2A_EVENT_TAG, decodeBindingMessage, encodeBindingMessage, mailboxOfInterfaceUrl } from "./binding";
export type { BindingMessage, ServiceParameters } from "./binding";
export { Mq9TransportFactory } from "./client-transport";
export type { Mq9TransportFactoryOptions } from "./client-transport";
export { serveA2aOverMq9 } from "./server";
export type { ServeA2aOverMq9Options } from "./server";
export { RetryingPushNotificationSender } from "./push-sender";
export type { RetryingPushSenderOptions } from "./push-sender";
