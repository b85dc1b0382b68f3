import { describe, expect, it } from "vitest";
import { clientAddress, newClientId, serverInfo } from "../../wire/nats/info";

const headers = (o: Record<string, string>) => new Headers(o);

describe("NATS INFO", () => {
  it("carries the fields clients read", () => {
    expect(serverInfo({ serverId: "abc", version: "0.1.0", authRequired: false, clientId: 42, clientIp: "203.0.113.9" })).toEqual({
      server_id: "abc", server_name: "mortarmq-edge", version: "0.1.0", proto: 1, headers: true, max_payload: 1048576,
      client_id: 42, client_ip: "203.0.113.9", tls_required: false,
    });
    const closed = serverInfo({ serverId: "abc", version: "0.1.0", authRequired: true, clientId: 7 });
    expect(closed.auth_required).toBe(true);
    expect("client_ip" in closed).toBe(false);
  });

  it("client ids are whole numbers from 1 to 2^53 − 1", () => {
    expect(newClientId((b) => b.fill(0xff))).toBe(Number.MAX_SAFE_INTEGER);
    expect(newClientId((b) => b.fill(0))).toBe(1);
    expect(newClientId((b) => b.set([0, 0, 0, 0, 0, 1, 0]))).toBe(256);
    const ids = new Set(Array.from({ length: 1000 }, () => newClientId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(Number.isSafeInteger(id) && id >= 1).toBe(true);
  });

  it("the client's address: first X-Forwarded-For entry, else CF-Connecting-IP", () => {
    expect(clientAddress(headers({ "X-Forwarded-For": "198.51.100.7, 203.0.113.1", "CF-Connecting-IP": "203.0.113.1" }))).toBe("198.51.100.7");
    expect(clientAddress(headers({ "CF-Connecting-IP": "203.0.113.1" }))).toBe("203.0.113.1");
    expect(clientAddress(headers({ "X-Forwarded-For": "::ffff:127.0.0.2" }))).toBe("127.0.0.2");
    expect(clientAddress(headers({ "X-Forwarded-For": "2001:DB8::1" }))).toBe("2001:db8::1");
    expect(clientAddress(headers({ "X-Forwarded-For": "[::1]" }))).toBe("::1");
    expect(clientAddress(headers({}))).toBeUndefined();
  });

  it("falls back to the listener's sole client address (the local runtime's loopback direct socket), after both headers", () => {
    expect(clientAddress(headers({}), "127.0.0.1")).toBe("127.0.0.1");
    expect(clientAddress(headers({}), "::1")).toBe("::1");
    expect(clientAddress(headers({ "X-Forwarded-For": "198.51.100.7" }), "127.0.0.1")).toBe("198.51.100.7");
    expect(clientAddress(headers({ "CF-Connecting-IP": "203.0.113.1" }), "::1")).toBe("203.0.113.1");
    expect(clientAddress(headers({}), "not-an-ip")).toBeUndefined();
  });

  it("ignores values that are not IP addresses", () => {
    expect(clientAddress(headers({ "X-Forwarded-For": "unknown", "CF-Connecting-IP": "203.0.113.1" }))).toBe("203.0.113.1");
    expect(clientAddress(headers({ "X-Forwarded-For": "300.1.1.1" }))).toBeUndefined();
    expect(clientAddress(headers({ "X-Forwarded-For": "<script>" }))).toBeUndefined();
    expect(clientAddress(headers({ "X-Forwarded-For": "1234" }))).toBeUndefined();
  });
});
