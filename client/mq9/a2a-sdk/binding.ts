/**
 * The A2A protocol binding over mq9 mailboxes (docs/a2a.md "A2A over mq9"),
 * pure: its URI, its tags, and how a request and its answers are laid out
 * in mq9 messages.
 *
 * - A request is one mq9 message SENT to the agent's mailbox: payload = the
 *   A2A JSON-RPC 2.0 request (the same object the JSON-RPC binding POSTs),
 *   with the A2A service parameters (`A2A-Version`, `A2A-Extensions`, …)
 *   as the extra member `serviceParameters` (header name → value);
 *   `mq9-reply-to` = the client's reply mailbox, `mq9-correlation-id` = a
 *   fresh id of the request.
 * - Each answer is one mq9 message SENT to the reply mailbox with the
 *   request's correlation id: payload = one JSON-RPC response (a streaming
 *   request's events, one per message, in order), tag {@link A2A_EVENT_TAG};
 *   the agent's activated extensions as `serviceParameters` too. The
 *   request's last message carries tag {@link A2A_END_TAG} (for a streaming
 *   request an empty payload after the events; otherwise the one response).
 */

/** The protocol-binding URI an AgentCard's `supportedInterfaces` entry declares for A2A over mq9. */
export const MQ9_A2A_BINDING = "urn:mortarmq:a2a:binding:mq9:v1";

/** Tag of every answer message. */
export const A2A_EVENT_TAG = "a2a.event";

/** Tag of a request's last answer message. */
export const A2A_END_TAG = "a2a.end";

/** A2A service parameters (header name → value), e.g. `A2A-Version`, `A2A-Extensions`. */
export type ServiceParameters = Record<string, string>;

const te = new TextEncoder();
const td = new TextDecoder();

/** A request or answer as carried: the JSON-RPC object and its service parameters. */
export interface BindingMessage {
  rpc: Record<string, unknown>;
  serviceParameters: ServiceParameters;
}

/** The payload of a request / answer: `rpc` (JSON text or object) with `serviceParameters` added when there are any. */
export function encodeBindingMessage(rpc: string | Record<string, unknown>, serviceParameters: ServiceParameters = {}): Uint8Array {
  const obj = typeof rpc === "string" ? (JSON.parse(rpc) as Record<string, unknown>) : rpc;
  const params = Object.keys(serviceParameters).length > 0 ? { serviceParameters } : {};
  return te.encode(JSON.stringify({ ...obj, ...params }));
}

/**
 * The JSON-RPC object and service parameters of a payload; null when it is
 * not a JSON object (an empty end marker, or garbage). Service parameters
 * that are not strings are dropped.
 */
export function decodeBindingMessage(payload: Uint8Array): BindingMessage | null {
  let v: unknown;
  try {
    v = JSON.parse(td.decode(payload));
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const { serviceParameters: sp, ...rpc } = v as Record<string, unknown>;
  const serviceParameters: ServiceParameters = {};
  if (typeof sp === "object" && sp !== null) {
    for (const [k, x] of Object.entries(sp)) if (typeof x === "string") serviceParameters[k] = x;
  }
  return { rpc, serviceParameters };
}

/** The service parameters of fetch-style request headers (what the SDK's JSON-RPC transport sets), minus the HTTP ones. */
export function serviceParametersOf(headers: HeadersInit | undefined): ServiceParameters {
  const out: ServiceParameters = {};
  new Headers(headers).forEach((v, k) => {
    if (k === "content-type" || k === "accept" || k === "content-length") return;
    out[k.replace(/(^|-)([a-z])/g, (_all: string, dash: string, c: string) => dash + c.toUpperCase()).replace(/^A2a-/, "A2A-")] = v;
  });
  return out;
}

/** Value of service parameter `name` (case-insensitive), or undefined. */
export function serviceParameter(params: ServiceParameters, name: string): string | undefined {
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(params)) if (k.toLowerCase() === want) return v;
  return undefined;
}

/** The mailbox of an interface URL: `mq9://<host>/<mail_address>` or a bare mail_address. */
export function mailboxOfInterfaceUrl(url: string): string {
  const m = /^mq9:\/\/[^/]*\/(.+)$/i.exec(url.trim());
  return m ? m[1]! : url.trim();
}
