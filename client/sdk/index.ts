/** MortarMQ v0 client SDK for Node. */
export { MortarClient } from "./client";
export type { ConnectOptions, PublishOptions, PublishResult, RetryOptions, TopicHandle } from "./client";
export { MortarClientError } from "./errors";
export type { ErrorSource } from "./errors";
export { openTransport } from "./transport";
export type { Transport, TransportOptions } from "./transport";
