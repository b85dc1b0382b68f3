/** NATS client protocol (server side): parser, encoder, headers, subjects, connection state machine. */
export * from "./errors";
export * from "./subject";
export * from "./headers";
export * from "./parser";
export * from "./encoder";
export * from "./connect";
export * from "./subscriptions";
export * from "./connection";
export * from "./info";
