/**
 * The two standard tunnels next to a broker: MortarMQ v0 over TCP →
 * `<url>/v0/mortar`, and NATS over TCP → `<url>/nats`. Shared by
 * `mortarmq bridge` and `mortarmq dev`.
 */
import { startTunnel, toWebSocketUrl, type Tunnel } from "./tunnel";

/** Which tunnels to start: `host:port` parts, or undefined to skip one. */
export interface BridgeOptions {
  /** Broker base URL, e.g. http://127.0.0.1:8787. */
  url: string;
  mortar?: { host: string; port: number };
  nats?: { host: string; port: number };
  /**
   * Sent as `Authorization: Bearer` on the NATS tunnel's upgrades only (for
   * NATS clients that send no token). MortarMQ v0 clients authenticate with
   * their own CONNECT token; `/v0/mortar` ignores the header.
   */
  token?: string;
  /** Offer permessage-deflate on the tunnels' WebSockets (see TunnelOptions.compress): both, or per tunnel. */
  compress?: boolean | { mortar?: boolean; nats?: boolean };
  /** Send WebSocket frames with the zero masking key (TunnelOptions.zeroMask; a loopback target only). */
  zeroMask?: boolean;
  /** Per-connection failures (e.g. broker unreachable), with the tunnel they happened on. */
  onConnectionError?: (kind: "mortar" | "nats", err: Error) => void;
}

/** One started tunnel, with the line to print for it. */
export interface StartedBridge {
  kind: "mortar" | "nats";
  tunnel: Tunnel;
  line: string;
}

/** One tunnel that could not start (e.g. port in use). */
export interface FailedBridge {
  kind: "mortar" | "nats";
  error: Error;
  line: string;
}

/**
 * Starts the requested tunnels. A tunnel that cannot listen is reported in
 * `failed` (the other one still starts).
 */
export async function startBridges(opts: BridgeOptions): Promise<{ started: StartedBridge[]; failed: FailedBridge[] }> {
  const started: StartedBridge[] = [];
  const failed: FailedBridge[] = [];
  const specs = [
    { kind: "mortar" as const, addr: opts.mortar, path: "v0/mortar", scheme: "tcp", what: "MortarMQ v0" },
    { kind: "nats" as const, addr: opts.nats, path: "nats", scheme: "nats", what: "NATS" },
  ];
  for (const s of specs) {
    if (!s.addr) continue;
    const target = toWebSocketUrl(opts.url, s.path);
    try {
      const tunnel = await startTunnel({
        host: s.addr.host, port: s.addr.port, target,
        token: s.kind === "nats" ? opts.token : undefined,
        compress: typeof opts.compress === "object" ? opts.compress[s.kind] === true : opts.compress === true,
        zeroMask: opts.zeroMask === true,
        onConnectionError: opts.onConnectionError && ((e) => opts.onConnectionError!(s.kind, e)),
      });
      started.push({ kind: s.kind, tunnel, line: `${s.what.padEnd(11)} ${s.scheme}://${tunnel.host}:${tunnel.port}  → ${target}` });
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      failed.push({ kind: s.kind, error, line: `${s.what} bridge NOT started on ${s.addr.host}:${s.addr.port}: ${error.message}` });
    }
  }
  return { started, failed };
}
