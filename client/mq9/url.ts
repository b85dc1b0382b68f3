/**
 * Which transport a broker URL selects, and the address each transport
 * connects to (pure).
 *
 * | URL | default transport | connects to |
 * |---|---|---|
 * | `http(s)://host[:port][/prefix]` | `http` | `POST <url>/mq9/<subject>` |
 * | `ws(s)://host[:port][/path]` | `nats-ws` | the URL, path `/nats` when none is given |
 * | `nats://host[:port]`, `tcp://…`, `host:port` | `nats` | TCP `host:port` (default port 4222) |
 *
 * An explicit transport converts between http and ws (`http://h` with
 * `nats-ws` is `ws://h/nats`; `ws://h/nats` with `http` is `http://h`); the
 * `nats` transport needs the address of the TCP bridge, which an http(s)
 * URL does not name.
 */
import { Mq9ClientError } from "./errors";
import type { Mq9TransportName } from "./transport";

/** The transport and the address it connects to. */
export interface Endpoint {
  transport: Mq9TransportName;
  /** http: base URL without a trailing slash; nats-ws: ws(s) URL; nats: `host:port`. */
  target: string;
}

/** The NATS TCP bridge's default port (`npm start`). */
export const DEFAULT_NATS_PORT = 4222;

/**
 * Resolves `url` (+ optional explicit transport) into an {@link Endpoint}.
 * @throws Mq9ClientError invalid_request for a URL that is not one of the forms above
 */
export function resolveEndpoint(url: string, transport?: Mq9TransportName): Endpoint {
  const raw = url.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `nats://${raw}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw Mq9ClientError.client(`broker URL ${JSON.stringify(url)} is not a URL (e.g. http://127.0.0.1:8787)`);
  }
  const scheme = u.protocol.slice(0, -1).toLowerCase();
  const family = scheme === "http" || scheme === "https" ? "http" : scheme === "ws" || scheme === "wss" ? "ws" : scheme === "nats" || scheme === "tcp" ? "tcp" : null;
  if (family === null) throw Mq9ClientError.client(`broker URL ${url}: unsupported scheme ${scheme}: (use http(s)://, ws(s)://, nats:// or tcp://)`);
  const chosen = transport ?? (family === "http" ? "http" : family === "ws" ? "nats-ws" : "nats");
  const secure = scheme === "https" || scheme === "wss";
  const path = u.pathname.replace(/\/+$/, "");
  switch (chosen) {
    case "http": {
      if (family === "tcp") throw Mq9ClientError.client(`the http transport needs an http(s):// URL, not ${url}`);
      const base = path.endsWith("/nats") ? path.slice(0, -"/nats".length) : path;
      return { transport: "http", target: `${secure ? "https" : "http"}://${u.host}${base}` };
    }
    case "nats-ws": {
      if (family === "tcp") throw Mq9ClientError.client(`the nats-ws transport needs a ws(s):// or http(s):// URL, not ${url}`);
      return { transport: "nats-ws", target: `${secure ? "wss" : "ws"}://${u.host}${path === "" ? "/nats" : path}` };
    }
    case "nats": {
      if (family !== "tcp") {
        throw Mq9ClientError.client(`the nats transport needs the NATS TCP bridge's address (nats://host:port, e.g. nats://127.0.0.1:${DEFAULT_NATS_PORT}), not ${url}`);
      }
      return { transport: "nats", target: `${u.hostname}:${u.port || DEFAULT_NATS_PORT}` };
    }
    default:
      throw Mq9ClientError.client(`unknown transport ${JSON.stringify(chosen)} (use "http", "nats-ws" or "nats")`);
  }
}
