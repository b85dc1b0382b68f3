/**
 * Which endpoint URLs a push subscription may target (docs/push.md
 * "Endpoint rules"; pure). The broker makes outbound requests on a
 * tenant's behalf, so a URL that reaches the broker's own network (SSRF)
 * is refused when the subscription is created:
 *
 * - `https://` only; `http://` only to a loopback host, and only when the
 *   deployment allows loopback (Worker var `PUSH_ALLOW_LOOPBACK=1`, which
 *   `mortarmq dev` sets). Loopback hosts (127.0.0.0/8, ::1, `localhost`)
 *   are refused otherwise.
 * - Private, link-local, shared (CGNAT), multicast, documentation and other
 *   reserved addresses are always refused, also in their other spellings
 *   (the WHATWG URL parser turns `0x7f.1` and `2130706433` into
 *   `127.0.0.1`; IPv4 embedded in IPv6 — `::ffff:a.b.c.d`, NAT64, 6to4 — is
 *   checked as IPv4; local-use NAT64 and Teredo are refused). A host with
 *   an empty label (`localhost..`) is refused. Host names that only exist inside a network
 *   (`*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, single-label
 *   names) are refused too, and so are the names of public wildcard DNS
 *   services that answer with the address written in the name or with
 *   127.0.0.1 (`127.0.0.1.nip.io`, `10-0-0-1.sslip.io`, `*.localtest.me`,
 *   `*.lvh.me`, … WILDCARD_DNS_SUFFIXES): a name check cannot see where
 *   they point.
 * - No user name or password in the URL (LIST shows the URL; receivers
 *   authenticate pushes by their signature).
 * - Optionally an allow list of hosts (Worker var `PUSH_ALLOWED_HOSTS`:
 *   `api.example.com,*.hooks.example.com`) narrows the hosts further; it
 *   never lifts a rule above.
 *
 * A host name is checked by name: the Worker cannot resolve it first (the
 * local runtime checks the address it connects to: client/local/outbound.ts).
 * Redirects are never followed (a 3xx answer is a failed attempt), so an
 * allowed host cannot bounce a push elsewhere.
 */
import { Mq9Error, echo } from "./errors";

/** Longest push endpoint URL, characters. */
export const MAX_PUSH_URL_CHARS = 2048;

/** What the deployment allows (from its Worker vars). */
export interface PushUrlPolicy {
  /** `PUSH_ALLOW_LOOPBACK=1`: http:// and https:// to loopback hosts are allowed. */
  allowLoopback: boolean;
  /** `PUSH_ALLOWED_HOSTS` entries (exact host, or `*.suffix` for its subdomains); empty = any public host. */
  allowedHosts: readonly string[];
}

/** The policy of a deployment from its vars (`PUSH_ALLOW_LOOPBACK`, `PUSH_ALLOWED_HOSTS`). */
export function pushUrlPolicy(allowLoopback: string | undefined, allowedHosts: string | undefined): PushUrlPolicy {
  return {
    allowLoopback: allowLoopback?.trim() === "1",
    allowedHosts: (allowedHosts ?? "").split(",").map((h) => h.trim().toLowerCase()).filter((h) => h !== ""),
  };
}

/** Address classes a push may not reach ("public" may). */
export type HostClass = "public" | "loopback" | "private" | "link-local" | "reserved" | "internal-name" | "wildcard-dns";

/**
 * Checks `url` against `policy`; returns the normalized URL (WHATWG
 * serialization, fragment removed). Throws Mq9Error(bad_request) naming
 * the rule that refuses it.
 */
export function checkPushUrl(url: string, policy: PushUrlPolicy): string {
  const refuse = (why: string) => new Mq9Error("bad_request", `push url "${echo(url)}" refused: ${why}`);
  if (url.length > MAX_PUSH_URL_CHARS) throw refuse(`longer than ${MAX_PUSH_URL_CHARS} characters`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw refuse("not an absolute URL");
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") throw refuse("the scheme must be https");
  if (u.username !== "" || u.password !== "") throw refuse("credentials in the URL are not allowed (receivers verify the mq9-signature header)");
  const host = u.hostname.toLowerCase().replace(/\.$/, ""); // one trailing dot is the DNS root
  if (!host.startsWith("[") && host.split(".").includes("")) throw refuse(`host ${echo(u.hostname)} has an empty label`);
  const cls = classifyHost(host);
  if (cls === "loopback") {
    if (!policy.allowLoopback) throw refuse("loopback addresses are not reachable from a deployed broker (PUSH_ALLOW_LOOPBACK is not set)");
  } else if (cls !== "public") {
    throw refuse(cls === "internal-name"
      ? `host ${echo(host)} is a local network name, not a public host`
      : cls === "wildcard-dns"
        ? `host ${echo(host)} is a wildcard DNS name (it resolves to the address in it or to loopback), not a public host`
        : `${echo(host)} is a ${cls} address, not a public one`);
  } else if (u.protocol !== "https:") {
    throw refuse(policy.allowLoopback ? "the scheme must be https (http:// only to loopback hosts)" : "the scheme must be https");
  }
  if (policy.allowedHosts.length > 0 && !policy.allowedHosts.some((p) => hostMatches(host, p))) {
    throw refuse(`host ${echo(host)} is not in PUSH_ALLOWED_HOSTS`);
  }
  u.hash = "";
  return u.href;
}

/** True when `host` matches allow-list entry `pattern` (exact, or `*.suffix` = any subdomain of suffix). */
export function hostMatches(host: string, pattern: string): boolean {
  if (pattern.startsWith("*.")) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

const INTERNAL_SUFFIXES = [".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet", ".corp"];

/**
 * Public wildcard DNS services whose names resolve to the address written
 * in them (`127.0.0.1.nip.io`, `app.10-0-0-1.sslip.io`) or to 127.0.0.1
 * (`anything.localtest.me`): the domain and every name under it are refused.
 */
export const WILDCARD_DNS_SUFFIXES: readonly string[] = [
  "nip.io", "sslip.io", "xip.io", "traefik.me", "backname.io", "localtest.me", "lvh.me", "vcap.me", "lacolhost.com",
  "localh.st", "fuf.me", "localhost.direct",
];

/**
 * Classifies a URL host as parsed by WHATWG URL (lower case, IPv4 in
 * dotted-quad form, IPv6 in brackets).
 */
export function classifyHost(host: string): HostClass {
  if (host.startsWith("[") && host.endsWith("]")) return classifyIpv6(host.slice(1, -1));
  const v4 = parseIpv4(host);
  if (v4 !== null) return classifyIpv4(v4);
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback";
  if (!host.includes(".") || INTERNAL_SUFFIXES.some((s) => host.endsWith(s))) return "internal-name";
  if (WILDCARD_DNS_SUFFIXES.some((s) => host === s || host.endsWith(`.${s}`))) return "wildcard-dns";
  return "public";
}

/** Dotted-quad IPv4 to a 32-bit number, or null when `s` is not one. */
export function parseIpv4(s: string): number | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
}

/** [network, prefix length, class] of the IPv4 ranges that are not public. */
const IPV4_RANGES: readonly (readonly [string, number, Exclude<HostClass, "public" | "internal-name">])[] = [
  ["0.0.0.0", 8, "reserved"], // "this network"
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "private"], // shared address space (CGNAT)
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"], // includes cloud metadata 169.254.169.254
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"], // IETF protocol assignments
  ["192.0.2.0", 24, "reserved"], // documentation
  ["192.88.99.0", 24, "reserved"], // 6to4 relay anycast
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"], // benchmarking
  ["198.51.100.0", 24, "reserved"],
  ["203.0.113.0", 24, "reserved"],
  ["224.0.0.0", 4, "reserved"], // multicast
  ["240.0.0.0", 4, "reserved"], // reserved, broadcast
];

const IPV4_TABLE = IPV4_RANGES.map(([net, len, cls]) => ({ net: parseIpv4(net)!, size: 2 ** (32 - len), cls }));

/** Class of an IPv4 address given as a 32-bit number. */
export function classifyIpv4(n: number): HostClass {
  for (const r of IPV4_TABLE) if (n >= r.net && n < r.net + r.size) return r.cls;
  return "public";
}

/** IPv6 text (no brackets; a dotted IPv4 tail allowed) to its 8 16-bit groups, or null. */
export function parseIpv6(s: string): number[] | null {
  let text = s;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === null) return null;
    text = `${text.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const head = groups(halves[0]!);
  let all = head;
  if (halves.length === 2) {
    const rest = groups(halves[1]!);
    const fill = 8 - head.length - rest.length;
    if (fill < 1) return null;
    all = [...head, ...Array.from({ length: fill }, () => 0), ...rest];
  }
  if (all.length !== 8 || all.some((g) => Number.isNaN(g))) return null;
  return all;
}

/** Class of an IPv6 address (text without brackets); IPv4 embedded by mapping, NAT64 or 6to4 is classified as IPv4. */
export function classifyIpv6(s: string): HostClass {
  const g = parseIpv6(s);
  if (g === null) return "reserved";
  const v4 = (hi: number, lo: number) => classifyIpv4(hi * 65536 + lo);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 7) && g[7] === 1) return "loopback"; // ::1
  if (zeros(0, 8)) return "reserved"; // ::
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6]!, g[7]!); // ::ffff:a.b.c.d (mapped)
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!); // ::ffff:0:a.b.c.d (SIIT translated)
  if (zeros(0, 6)) return v4(g[6]!, g[7]!); // ::a.b.c.d (compatible, deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "reserved"; // local-use NAT64 64:ff9b:1::/48 (RFC 8215)
  if (g[0] === 0x2001 && g[1] === 0) return "reserved"; // Teredo 2001::/32 (the IPv4 inside is obfuscated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6]!, g[7]!); // NAT64 64:ff9b::/96
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!); // 6to4 2002::/16
  if ((g[0]! & 0xffc0) === 0xfe80) return "link-local"; // fe80::/10
  if ((g[0]! & 0xfe00) === 0xfc00) return "private"; // fc00::/7 unique local
  if ((g[0]! & 0xff00) === 0xff00) return "reserved"; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return "reserved"; // documentation
  if (g[0] === 0x0100 && zeros(1, 4)) return "reserved"; // discard 100::/64
  if ((g[0]! & 0xffc0) === 0xfec0) return "private"; // site-local (deprecated)
  return "public";
}
