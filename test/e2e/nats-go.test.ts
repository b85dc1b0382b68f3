/**
 * The real nats.go client (Debian golang-github-nats-io-go-nats-dev, built
 * here with GO111MODULE=off; `.ci/run` installs it) against the real local
 * broker, through the NATS TCP bridge and over WebSocket to `/nats`: what
 * it reads from INFO — GetClientID() and GetClientIP() must work, as they
 * do against nats-server — and mq9 requests with NATS headers
 * (docs/nats.md, "INFO"). The program is test/fixtures/nats-go/clientinfo.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../client/local/broker";
import { useLocalBroker } from "../fixtures/e2e-broker";

const run = promisify(execFile);
const e2e = useLocalBroker("natsgo", { natsBridge: true });
const binDir = mkdtempSync(join(tmpdir(), "mortarmq-natsgo-"));
const bin = join(binDir, "clientinfo");
// CGO_ENABLED=0: a pure-Go build, so no C compiler is needed
const GO_ENV = { ...process.env, GO111MODULE: "off", GOPATH: "/usr/share/gocode", GOFLAGS: "", CGO_ENABLED: "0" };

/** Builds the client; started at load so it overlaps the broker's start-up (go build takes ~30 s cold). */
async function build(): Promise<Error | null> {
  try {
    await run("go", ["build", "-o", bin, "./test/fixtures/nats-go/clientinfo"], { cwd: PACKAGE_ROOT, env: GO_ENV, timeout: 240_000 });
    return null;
  } catch (err) {
    return new Error(
      "cannot build the nats.go test client — it needs Debian's golang-go and golang-github-nats-io-go-nats-dev "
        + `(apt-get install -y golang-go golang-github-nats-io-go-nats-dev; .ci/run installs them): ${(err as Error).message}`,
    );
  }
}
const built = build();

beforeAll(async () => {
  const err = await built;
  if (err) throw err;
}, 300_000);

afterAll(() => rmSync(binDir, { recursive: true, force: true }));

interface ClientInfo {
  client_id: number;
  client_id_err: string;
  client_ip: string;
  client_ip_err: string;
  server_id: string;
  max_payload: number;
  headers: boolean;
  auth_required: boolean;
  create: string;
  send: string;
  query: string;
}

async function clientinfo(...args: string[]): Promise<ClientInfo> {
  const { stdout } = await run(bin, args, { cwd: resolve(PACKAGE_ROOT), timeout: 60_000 });
  return JSON.parse(stdout) as ClientInfo;
}

function expectWorkingClient(r: ClientInfo): void {
  expect(r.client_id_err).toBe("");
  expect(r.client_id).toBeGreaterThan(0);
  expect(Number.isSafeInteger(r.client_id)).toBe(true); // JavaScript clients read it exactly too
  expect(r.client_ip_err).toBe("");
  expect(r.client_ip).toBe("127.0.0.1");
  expect(r).toMatchObject({ max_payload: 1048576, headers: true, auth_required: false });
  expect(r.server_id).not.toBe("");
  expect(JSON.parse(r.create)).toMatchObject({ error: "" });
  expect(JSON.parse(r.send)).toEqual({ error: "", msg_id: 0 });
  expect(JSON.parse(r.query).messages).toMatchObject([{ msg_id: 0, key: "state", tags: ["go", "nats"], payload: btoa("from nats.go") }]);
}

describe("nats.go against the broker", () => {
  it("through the TCP bridge: GetClientID/GetClientIP work, client_ip is the TCP client's address", async () => {
    expectWorkingClient(await clientinfo(`nats://127.0.0.1:${e2e.natsBridge.port}`));
  });

  it("over WebSocket to /nats: the same", async () => {
    expectWorkingClient(await clientinfo(e2e.broker.url.replace(/^http/, "ws"), "/nats"));
  });

  it("every connection has its own client_id", async () => {
    const ids = await Promise.all([1, 2, 3].map(() => clientinfo(`nats://127.0.0.1:${e2e.natsBridge.port}`).then((r) => r.client_id)));
    expect(new Set(ids).size).toBe(3);
  });
});
