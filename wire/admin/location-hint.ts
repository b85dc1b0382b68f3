/**
 * A topic's optional location hint (docs/deploy.md "Placement"; issue 27
 * item 6): the Cloudflare regions a Durable Object can be asked to start in
 * (Cloudflare docs, Durable Objects "Data location" → "Provide a location
 * hint"). Shared by the Worker (validation: the zod schema is in
 * console.ts), the TopicRegistry and the CLI. Pure; no imports (the CLI
 * loads it at startup).
 */

/** The location hints Cloudflare accepts, and the region each names. */
export const LOCATION_HINT_REGIONS = {
  wnam: "Western North America",
  enam: "Eastern North America",
  sam: "South America",
  weur: "Western Europe",
  eeur: "Eastern Europe",
  apac: "Asia-Pacific",
  oc: "Oceania",
  afr: "Africa",
  me: "Middle East",
} as const;

/** A location hint (`wnam`, `weur`, …). */
export type LocationHint = keyof typeof LOCATION_HINT_REGIONS;

/** Every location hint, in Cloudflare's order. */
export const LOCATION_HINTS = Object.keys(LOCATION_HINT_REGIONS) as LocationHint[];

/** Whether `v` is a location hint. */
export function isLocationHint(v: unknown): v is LocationHint {
  return typeof v === "string" && Object.hasOwn(LOCATION_HINT_REGIONS, v);
}

/** The refusal of a value that is not a location hint: names the allowed ones. */
export function locationHintRefusal(v: unknown): string {
  const shown = typeof v === "string" ? `"${v.slice(0, 40)}"` : String(v);
  return `location hint ${shown} is not one of ${LOCATION_HINTS.join(", ")} (${LOCATION_HINTS.map((h) => `${h}: ${LOCATION_HINT_REGIONS[h]}`).join("; ")})`;
}
