/**
 * The `ALLOWED_HOSTS` a local broker runs with (worker/request-guard.ts;
 * docs/operations.md "Host and Origin checks"): the host names a request
 * may name in `Host`, so that a DNS-rebinding page (`Host:
 * rebind.evil.example`, resolving to this machine) is refused. Pure.
 *
 * - Always the loopback names `localhost`, `127.0.0.1`, `[::1]` (the TCP
 *   bridges and the launcher's health probe use them).
 * - Bound to a wildcard address (`0.0.0.0`, `::`): also this machine's host
 *   name and every address of its network interfaces — what a client on the
 *   network can reach it by.
 * - Bound to another address or name: also that one.
 * - Then the names the user asked for (`--var ALLOWED_HOSTS=…`: a DNS name
 *   or proxy in front of it); `*` turns the check off.
 */

/** Host names every local broker answers to. */
export const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"] as const;

/** What the machine is called and reachable at (`os.hostname()`, the addresses of `os.networkInterfaces()`). */
export interface MachineNames {
  hostname: string;
  addresses: readonly string[];
}

/** `host` as a URL host name: lower case, an IPv6 address in brackets, no IPv6 zone. */
export function asUrlHostname(host: string): string {
  const h = host.trim().toLowerCase().replace(/%.*$/, "");
  return h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
}

/**
 * The ALLOWED_HOSTS value (comma-separated) for a broker bound to `bindHost`,
 * with `extra` (the user's own ALLOWED_HOSTS, comma-separated; may be undefined).
 */
export function devAllowedHosts(bindHost: string, extra: string | undefined, machine: MachineNames): string {
  const asked = (extra ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (asked.includes("*")) return "*";
  const names = new Set<string>(LOOPBACK_HOSTS);
  const bind = asUrlHostname(bindHost);
  if (bind === "0.0.0.0" || bind === "[::]" || bind === "") {
    if (machine.hostname.trim() !== "") names.add(asUrlHostname(machine.hostname));
    for (const a of machine.addresses) names.add(asUrlHostname(a));
  } else {
    names.add(bind);
  }
  for (const a of asked) names.add(a.startsWith("*.") ? a.toLowerCase() : asUrlHostname(a));
  return [...names].join(",");
}
