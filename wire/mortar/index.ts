/**
 * MortarMQ v0 wire protocol, pure TypeScript (runs in Node and workerd):
 * constants and protocol decisions, typed frames, encoder/decoder, streaming
 * decoder, OK result layouts, the error registry and request checks.
 */
export * from "./constants";
export * from "./frames";
export * from "./codec";
export * from "./stream";
export * from "./results";
export * from "./errors";
export * from "./validate";
export * from "./dead-letter";
export { renderErrorsMarkdown } from "./errors-doc";
