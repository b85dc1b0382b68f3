/**
 * Stand-in for node-websocket.ts in browser and Worker builds (package.json
 * `browser` field; client/mq9/build.mjs): those runtimes have a global
 * WebSocket, so there is no fallback and `ws` is never bundled.
 */
import type { WsFactory } from "./node-websocket";

/** No fallback socket factory here. */
export const nodeWebSocket: WsFactory | undefined = undefined;
