import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../worker/env";

/** Placeholder: implemented by its issue (not yet built). */
export class TenantDirectory extends DurableObject<Env> {}
