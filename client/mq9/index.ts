/**
 * `@mortarmq/mq9`: the typed mq9 client for Node, browsers and Workers
 * (client/mq9/README.md), an npm workspace of this repository built by
 * client/mq9/build.mjs. Imports only wire/ and npm packages; the NATS
 * transports are loaded when chosen.
 */
export { Mq9Client, DEFAULT_TIMEOUT_MS, mq9Subjects } from "./client";
export type { CallOptions, FetchOptions, Mq9ConnectOptions, Mq9Reply, PushOptions, QueryOptions, RequestOptions } from "./client";
export type { DeadLetterInfo, PushInfo } from "../../wire/mq9/push-types";
export { verifyPushWebhook, verifyPushSignature, parsePushSignature, PUSH_SIGNATURE_HEADER, PUSH_SIGNATURE_TOLERANCE_S } from "./push-signature";
export type { PushHeaders, VerifyPushOptions } from "./push-signature";
export { a2aUpdateOf } from "./a2a";
export type { A2aPushConfig, A2aUpdate, A2aUpdatesOptions } from "./a2a";
export { Mq9Message } from "./message";
export type { Mq9WireMessage, SendOptions } from "./message";
export { Mq9Consumer } from "./consume";
export type { ConsumeOptions } from "./consume";
export { Mq9Agents } from "./agents";
export type { AgentCard, AgentRef, DiscoverOptions, DiscoveredAgent } from "./agents";
export { Mq9ClientError, classifyMq9Error } from "./errors";
export type { Mq9ErrorKind, Mq9ErrorSource } from "./errors";
export type { Mq9Payload } from "./payload";
export type { Mq9TransportName } from "./transport";
export type { Priority } from "../../wire/mq9/priority";
