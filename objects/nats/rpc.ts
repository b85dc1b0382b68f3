/**
 * The NatsSession's surface (objects/nats/NatsSession.ts): no RPC method.
 * A NATS connection's object is reached only by `fetch` — the WebSocket
 * upgrade of `GET /nats`, a fresh id per connection (stub.ts) — and no
 * other object calls it: its mq9 requests go out through
 * objects/mq9/dispatch.ts and their replies come back as the calls'
 * answers.
 *
 * The upgrade: `Authorization: Bearer <token>` (optional; the bridge's
 * `--token`) authenticates the connection before CONNECT — 401 when the
 * token is refused; `CF-Connecting-IP` (else LOCAL_CLIENT_ADDRESS) is the
 * INFO `client_ip`. A second upgrade of the same object gets 409, anything
 * but an upgrade 426 (session-base/SocketSession.ts).
 */

/** What a caller may do with a NatsSession stub. */
export interface NatsSessionRpc {
  /** The WebSocket upgrade (see the module comment); 101 with the socket, or the refusal. */
  fetch(upgrade: Request): Promise<Response>;
}
