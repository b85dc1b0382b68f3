/** MortarMQ v0 client SDK for Node. */
export { MortarClient } from "./client";
export type { ConnectOptions, PublishOptions, PublishResult, RetryOptions, TopicHandle } from "./client";
export { MortarClientError } from "./errors";
export type { DeclareOptions, TopicDeclared, TopicRetention } from "./retention";
export { Message, Subscription } from "./consumer";
export type { PullOptions, SubscribeOptions } from "./consumer";
export type { ErrorSource } from "./errors";
export { openTransport } from "./transport";
export type { Transport, TransportOptions } from "./transport";
