/**
 * Local TCP ports of a broker: finding a free one and refusing a taken one
 * before anything starts (so another broker's port is never mistaken for
 * ours, and a second `npm start` fails at once instead of running half).
 */
import { createServer } from "node:net";

/** A port some other process listens on. Carries what it was for and the option that chooses it. */
export class PortInUseError extends Error {
  override readonly name = "PortInUseError";

  /**
   * @param what what the port was for, e.g. "HTTP", "NATS bridge"
   * @param flag the `mortarmq dev` option that sets it, e.g. "--nats-port"
   */
  constructor(readonly what: string, readonly flag: string, readonly host: string, readonly port: number) {
    super(`${what} port ${host}:${port} is already in use (another broker running?)`);
  }
}

/** Finds a free TCP port on `host`. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

/**
 * Resolves when `port` on `host` can be listened on (port 0: when `host`
 * can be listened on at all).
 * @throws PortInUseError on EADDRINUSE; Error `what port host:port: …` on
 *   any other failure (`… is not an address of this machine (--host)` for
 *   EADDRNOTAVAIL; EACCES, … with the system's message)
 */
export async function assertPortFree(host: string, port: number, what = "HTTP", flag = "--port"): Promise<void> {
  await new Promise<void>((res, rej) => {
    const srv = createServer();
    srv.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EADDRINUSE") return rej(new PortInUseError(what, flag, host, port));
      const why = e.code === "EADDRNOTAVAIL" ? `${host} is not an address of this machine (--host)` : e.message;
      rej(new Error(`${what} port ${host}:${port}: ${why}`));
    });
    srv.listen(port, host, () => srv.close(() => res()));
  });
}
