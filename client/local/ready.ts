/**
 * Waiting for a starting local broker: its `GET /healthz` answers 200 once
 * the Worker and a storage probe answer; or, for a `mortarmq dev` child, its
 * ready message.
 */

/** Auth mode a broker reports on /healthz: "open" (no tokens, tenant `default`) or "tokens". */
export type AuthMode = "open" | "tokens";

/**
 * What `mortarmq dev` (client/cli/dev.ts) sends its parent over an IPC
 * channel once ready; startLocalBroker (broker.ts) waits for it.
 */
export interface DevReadyMessage {
  type: "mortarmq-dev-ready";
  url: string;
  port: number;
  stateDir: string;
  auth: AuthMode;
  /** Ports of the bridges that were started. */
  bridges: { mortar?: number; nats?: number };
  /** Pid of the workerd process, if found. */
  runtimePid?: number;
}

/**
 * Polls `GET <url>/healthz` every 200 ms until it answers 200 and resolves
 * with the auth mode it reports.
 * @param opts.timeoutMs how long to wait, ms
 * @param opts.failed checked before each probe: a message when the broker's process already failed (stops waiting)
 * @throws Error "<failed message>" or "broker not ready on <url> in <n> s"
 */
export async function waitForHealthz(url: string, opts: { timeoutMs: number; failed?: () => string | undefined }): Promise<AuthMode> {
  const deadline = Date.now() + opts.timeoutMs;
  while (true) {
    const failure = opts.failed?.();
    if (failure !== undefined) throw new Error(failure);
    if (Date.now() > deadline) throw new Error(`broker not ready on ${url} in ${Math.round(opts.timeoutMs / 1000)} s`);
    try {
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) });
      const body = (await r.json().catch(() => ({}))) as { auth?: string };
      if (r.status === 200) return body.auth === "tokens" ? "tokens" : "open";
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
