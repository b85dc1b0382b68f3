/** mq9 wire layer: pure code shared by the HTTP and NATS transports and the Mailbox object. */
export * from "./address";
export * from "./base64";
export * from "./conversation";
export * from "./errors";
export * from "./headers";
export * from "./limits";
export * from "./messages";
export * from "./priority";
export * from "./push";
export * from "./push-signature";
export * from "./push-url";
export * from "./schemas";
export * from "./subject";
export * from "./a2a";
