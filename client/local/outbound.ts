/**
 * Where the local Worker's outbound `fetch()` may connect (issue 28 item 7):
 * workerd's own network service, restricted to public addresses. workerd
 * checks the address it actually connects to — a host name is resolved
 * first and only its permitted addresses are tried; none permitted behaves
 * as a name that does not exist (kj `Network::restrictPeers`). So a push URL
 * whose public-looking name resolves to 127.0.0.1 or a private address
 * (DNS rebinding, wildcard DNS) never reaches it, whatever the push URL
 * rules (wire/mq9/push-url.ts) let through. Miniflare's default outbound
 * allows public and private addresses.
 *
 * Allowed besides public addresses:
 * - loopback (`local`: 127.0.0.0/8, ::1) when the Worker var
 *   `PUSH_ALLOW_LOOPBACK=1` is set (`mortarmq dev` on an open broker, or
 *   `--allow-loopback-push`);
 * - the addresses of the operator's `EMBEDDINGS_URL` host (an embeddings
 *   server on this machine or network, docs/agents.md), resolved at start.
 *
 * On Cloudflare this is not needed and not used: see docs/push.md
 * "Endpoint rules".
 */
import { lookup } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { rootCertificates } from "node:tls";

/** Miniflare's `outboundService` of the `network` kind. */
export interface OutboundNetwork {
  network: { allow: string[]; deny: string[]; tlsOptions: { trustBrowserCas: boolean; trustedCertificates: string[] } };
}

/** Certificates to trust besides the browser CAs: as Miniflare's default outbound (Windows' roots, NODE_EXTRA_CA_CERTS). */
function trustedCertificates(): string[] {
  const certs = process.platform === "win32" ? [...rootCertificates] : [];
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  if (extra) {
    try {
      certs.push(...(readFileSync(extra, "utf8").match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []));
    } catch { /* as Miniflare: an unreadable file adds nothing */ }
  }
  return certs;
}

/** `addr` as a one-address CIDR block. */
const block = (addr: string) => `${addr}/${isIP(addr) === 6 ? 128 : 32}`;

/** The addresses of `url`'s host (an IP literal as is; a name resolved now); none for a URL that does not parse or a name that does not resolve. */
async function hostAddresses(url: string): Promise<string[]> {
  let host: string;
  try {
    host = new URL(url.trim()).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return [];
  }
  if (isIP(host) !== 0) return [host];
  try {
    return (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

/**
 * The outbound network for a Worker with `vars` (its final bindings: Worker
 * vars from wrangler.toml, `.dev.vars` and the command line): public
 * addresses, plus loopback with PUSH_ALLOW_LOOPBACK=1, plus EMBEDDINGS_URL's
 * host addresses.
 */
export async function outboundNetwork(vars: Readonly<Record<string, unknown>>): Promise<OutboundNetwork> {
  const allow = ["public"];
  if (String(vars.PUSH_ALLOW_LOOPBACK ?? "").trim() === "1") allow.push("local");
  if (typeof vars.EMBEDDINGS_URL === "string" && vars.EMBEDDINGS_URL.trim() !== "") {
    for (const a of await hostAddresses(vars.EMBEDDINGS_URL)) allow.push(block(a));
  }
  return { network: { allow, deny: [], tlsOptions: { trustBrowserCas: true, trustedCertificates: trustedCertificates() } } };
}
