/**
 * The TCP bridge a suite measures through: the broker launcher's own (what
 * `npm start` listens on), or — for a broker whose launcher starts none, e.g.
 * a `--baseline` revision from before launchers had bridges — a tunnel in
 * this process, as the suites used before.
 */
import { startTunnel, toWebSocketUrl } from "../client/bridge/tunnel";
import type { LocalBroker } from "../client/local/broker";

/** A bridge port and how to give it back (a no-op for the launcher's own). */
export interface BenchBridge {
  port: number;
  /** "launcher" or "bench process". */
  where: string;
  close(): Promise<void>;
}

/** The `kind` bridge of `broker`. */
export async function benchBridge(broker: LocalBroker, kind: "mortar" | "nats"): Promise<BenchBridge> {
  const own = (broker.bridges as LocalBroker["bridges"] | undefined)?.[kind];
  if (own !== undefined) return { port: own, where: "launcher", close: async () => {} };
  const tunnel = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(broker.url, kind === "mortar" ? "v0/mortar" : "nats") });
  return { port: tunnel.port, where: "bench process", close: () => tunnel.close() };
}
