/**
 * The socket factory of the `nats-ws` transport where there is no global
 * WebSocket (Node 20): a socket from the `ws` package, loaded only then.
 * Browser and Worker builds use node-websocket.browser.ts instead (they
 * always have a global WebSocket), so their bundles never name `ws`.
 */

/** nats.ws's hook for creating the socket (its `wsFactory` connection option). */
export type WsFactory = (url: string) => Promise<{ socket: WebSocket; encrypted: boolean }>;

/** A socket from the `ws` package (an optional peer dependency), for runtimes without a global WebSocket. */
export const nodeWebSocket: WsFactory | undefined = async (url) => {
  const { WebSocket: NodeWebSocket } = await import("ws");
  return { socket: new NodeWebSocket(url) as unknown as WebSocket, encrypted: url.startsWith("wss://") };
};
