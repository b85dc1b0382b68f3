import { describe, expect, it } from "vitest";
import { authLine, devPushVars, devVars } from "../../client/cli/dev";
import { devAllowedHosts } from "../../client/local/allowed-hosts";
import { HealthWatch, isHealthProbeLog, isRuntimeNoise } from "../../client/local/health";
import { loopbackHost, portOfUrl, soleClientAddress } from "../../client/local/miniflare-host";
import { parseLock } from "../../client/local/state-lock";

describe("mortarmq dev --var / --auth-tokens", () => {
  it("collects repeated --var NAME=value (values may contain = and :) and the --auth-tokens shortcut", () => {
    expect(devVars([])).toEqual({});
    expect(devVars(["CORS_ORIGINS=https://a.example,https://b.example", "X=a=b:c", "EMPTY="], "t1:acme,t2:beta")).toEqual({
      CORS_ORIGINS: "https://a.example,https://b.example",
      X: "a=b:c",
      EMPTY: "",
      AUTH_TOKENS: "t1:acme,t2:beta",
    });
    expect(devVars(["AUTH_TOKENS=tok:acme"])).toEqual({ AUTH_TOKENS: "tok:acme" });
  });

  it("rejects malformed or conflicting options with a message", () => {
    expect(() => devVars(["CORS_ORIGINS"])).toThrow('--var expects NAME=value (e.g. --var CORS_ORIGINS=https://app.example), got "CORS_ORIGINS"');
    expect(() => devVars(["1BAD=x"])).toThrow("--var expects NAME=value");
    expect(() => devVars(["A=1", "A=2"])).toThrow("--var A given more than once");
    expect(() => devVars(["AUTH_TOKENS=a:b"], "c:d")).toThrow("use either --auth-tokens or --var AUTH_TOKENS=…, not both");
  });

  it("says plainly when the broker runs open", () => {
    expect(authLine("open")).toContain('OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured: every client is tenant "default"');
    expect(authLine("tokens")).toContain("tokens required");
  });
});

describe("mortarmq dev ALLOWED_HOSTS (DNS rebinding)", () => {
  const machine = { hostname: "Devbox", addresses: ["127.0.0.1", "192.168.1.20", "::1", "fe80::1%eth0"] };

  it("on a loopback address: the loopback names only, plus names asked for", () => {
    expect(devAllowedHosts("127.0.0.1", undefined, machine)).toBe("localhost,127.0.0.1,[::1]");
    expect(devAllowedHosts("::1", "broker.lan, *.tunnel.example", machine)).toBe("localhost,127.0.0.1,[::1],broker.lan,*.tunnel.example");
  });

  it("on a wildcard address: also the machine's name and addresses; on another address, that one; * turns the check off", () => {
    expect(devAllowedHosts("0.0.0.0", undefined, machine)).toBe("localhost,127.0.0.1,[::1],devbox,192.168.1.20,[fe80::1]");
    expect(devAllowedHosts("192.168.1.20", undefined, machine)).toBe("localhost,127.0.0.1,[::1],192.168.1.20");
    expect(devAllowedHosts("127.0.0.1", "*", machine)).toBe("*");
  });
});

describe("mortarmq dev push to loopback endpoints (issue 28 item 7)", () => {
  it("is allowed on an open broker, not when tokens are required unless asked; an explicit --var wins", () => {
    expect(devPushVars({}, false)).toEqual({ PUSH_ALLOW_LOOPBACK: "1" });
    expect(devPushVars({ AUTH_TOKENS: "t:acme" }, false)).toEqual({ AUTH_TOKENS: "t:acme" });
    expect(devPushVars({ ADMIN_TOKEN: "adm" }, false)).toEqual({ ADMIN_TOKEN: "adm" });
    expect(devPushVars({ AUTH_TOKENS: "t:acme" }, true)).toEqual({ AUTH_TOKENS: "t:acme", PUSH_ALLOW_LOOPBACK: "1" });
    expect(devPushVars({ PUSH_ALLOW_LOOPBACK: "0" }, false)).toEqual({ PUSH_ALLOW_LOOPBACK: "0" });
  });
});

describe("mortarmq dev health watch", () => {
  it("declares the broker dead only after no probe succeeded for the whole grace", () => {
    const w = new HealthWatch(1_000, 10_000);
    expect(w.observe(false, 4_000)).toBe(false);
    expect(w.observe(true, 7_000)).toBe(false); // answered again: the clock restarts
    expect(w.observe(false, 16_999)).toBe(false);
    expect(w.observe(false, 17_000)).toBe(true);
    expect(w.silentFor(17_000)).toBe(10_000);
  });
});

describe("mortarmq dev output", () => {
  it("leaves out only the request-log lines of successful /healthz probes", () => {
    expect(isHealthProbeLog("[wrangler:info] GET /healthz 200 OK (2ms)")).toBe(true);
    expect(isHealthProbeLog("\x1b[2m[wrangler:info]\x1b[22m GET /healthz \x1b[32m200\x1b[39m OK (12ms)")).toBe(true);
    expect(isHealthProbeLog("[wrangler:info] GET /healthz 503 Service Unavailable (3002ms)")).toBe(false);
    expect(isHealthProbeLog("[wrangler:info] GET /stats 200 OK (5ms)")).toBe(false);
    expect(isHealthProbeLog("[wrangler:info] Ready on http://127.0.0.1:8787")).toBe(false);
    expect(isHealthProbeLog("[mf:info] GET /healthz 200 OK (1ms)")).toBe(true); // Miniflare's request log (--verbose)
    expect(isHealthProbeLog("\x1b[32m[mf:info]\x1b[39m \x1b[1mGET\x1b[22m /healthz \x1b[32m\x1b[1m200\x1b[22m OK \x1b[39m\x1b[90m(1ms)\x1b[39m")).toBe(true);
    expect(isHealthProbeLog("[mf:info] POST /mq9/$mq9.AI.MSG.SEND.a 200 OK (4ms)")).toBe(false);
  });

  it("leaves out workerd's raw-address stack lines and notices, keeps the error lines", () => {
    expect(isRuntimeNoise("stack: /x/node_modules/@cloudflare/workerd-linux-64/bin/workerd@5219ad8 /x/workerd@5217791 /lib/x86_64-linux-gnu/libc.so.6@27249")).toBe(true);
    expect(isRuntimeNoise("stack: /x/workerd@37c2334 /x/workerd@1fd6e81; sentryErrorContext = jsgInternalError; wdErrId = 966ufdv9")).toBe(true);
    expect(isRuntimeNoise("stack: 0 7f3a2b1c 55d0e0a1 55d0e0b2")).toBe(true);
    expect(isRuntimeNoise("Not symbolizing stack traces because $LLVM_SYMBOLIZER is not set. To symbolize stack traces, set $LLVM_SYMBOLIZER")).toBe(true);
    expect(isRuntimeNoise("workerd/server/server.c++:5492: error: Uncaught exception: kj/compat/url.c++:165: failed")).toBe(false);
    expect(isRuntimeNoise("mortarmq: running OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured")).toBe(false);
    expect(isRuntimeNoise("stack: see above")).toBe(false);
    expect(isRuntimeNoise("workerd/io/actor-sqlite.c++:970: warning: NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm.; scheduledTime = 1796196845.709s; localAlarmState.orDefault(kj::UNIX_EPOCH) = 1796196855.711s; actorId = fe8a5a63")).toBe(true);
    expect(isRuntimeNoise("workerd/io/actor-sqlite.c++:971: warning: something else about alarms")).toBe(false);
  });
});

describe("mortarmq dev addresses and state lock", () => {
  it("reaches a wildcard listen address over loopback", () => {
    expect(loopbackHost("0.0.0.0")).toBe("127.0.0.1");
    expect(loopbackHost("::")).toBe("[::1]");
    expect(loopbackHost("127.0.0.1")).toBe("127.0.0.1");
    expect(loopbackHost("::1")).toBe("[::1]");
  });

  it("a direct HTTP socket only where every client has one known address (127.0.0.1, ::1)", () => {
    expect(soleClientAddress("127.0.0.1")).toBe("127.0.0.1");
    expect(soleClientAddress("::1")).toBe("::1");
    expect(soleClientAddress("[::1]")).toBe("::1");
    for (const host of ["0.0.0.0", "::", "localhost", "127.0.0.2", "192.0.2.10", ""]) expect(soleClientAddress(host)).toBeUndefined();
  });

  it("reads the port of the entry URL also when it is the scheme's default (--port 80: URL.port is \"\")", () => {
    expect(portOfUrl(new URL("http://127.0.0.1:80/"))).toBe(80);
    expect(portOfUrl(new URL("https://127.0.0.1:443/"))).toBe(443);
    expect(portOfUrl(new URL("http://127.0.0.1:8792/"))).toBe(8792);
    expect(portOfUrl(new URL("http://[::1]:443/"))).toBe(443);
  });

  it("reads the lock's owner and, once recorded, its workerd; an older lock holds the owner only", () => {
    expect(parseLock("4242\nruntime 4250\n")).toEqual({ owner: 4242, runtime: 4250 });
    expect(parseLock("4242\n")).toEqual({ owner: 4242 });
    expect(parseLock("4242")).toEqual({ owner: 4242 }); // written by the earlier wrangler dev launcher
    expect(parseLock("4242\nruntime x\n")).toEqual({ owner: 4242 });
  });
});
