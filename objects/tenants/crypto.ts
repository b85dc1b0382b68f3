/**
 * Token hashing and random ids for the tenant directory (Web Crypto; runs
 * in workerd and Node ≥ 20).
 */
import { TOKEN_SECRET_BYTES, formatIssuedToken, toHex } from "../../wire/admin/tenants";

const te = new TextEncoder();

/**
 * SHA-256 of a token, lower-case hex. Issued tokens carry 256 random bits,
 * so a fast unsalted hash is enough: nothing can be guessed from it.
 */
export async function tokenHash(token: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", te.encode(token))));
}

/** `n` random bytes as lower-case hex. */
export function randomHex(n: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(n)));
}

/** A new issued token for `tenant`: its id, the token (shown once) and its hash (stored). */
export async function newIssuedToken(tenant: string): Promise<{ tokenId: string; token: string; hash: string }> {
  const tokenId = randomHex(6);
  const token = formatIssuedToken(tenant, tokenId, crypto.getRandomValues(new Uint8Array(TOKEN_SECRET_BYTES)));
  return { tokenId, token, hash: await tokenHash(token) };
}
