/**
 * Durable Object names. Every name starts with the object kind and the
 * tenant, so tenants never share an object (DESIGN.md §6). Parts are joined
 * with "/" after URI-component encoding, so no part can forge another.
 */

/** Builds the `idFromName` name for an object of `kind` in `tenant`. */
export function objectName(kind: string, tenant: string, ...parts: (string | number)[]): string {
  return [kind, tenant, ...parts].map((p) => encodeURIComponent(String(p))).join("/");
}
