/**
 * Bindings and configuration the Worker and every Durable Object receive.
 * Declared by hand (not generated) so that vars are plain strings; keep in
 * sync with wrangler.toml.
 */
export interface Env {
  /** Comma-separated `token:tenant` pairs; empty/unset = open broker, tenant `default`. */
  AUTH_TOKENS?: string;
  /** Comma-separated origins allowed by CORS on /mq9 and /nats; default `*` when auth is open. */
  CORS_ORIGINS?: string;
  SESSION: DurableObjectNamespace;
  REGISTRY: DurableObjectNamespace;
  PARTITION: DurableObjectNamespace;
  GROUP: DurableObjectNamespace;
  MAILBOX: DurableObjectNamespace<import("../objects/mailbox/Mailbox").Mailbox>;
  AGENTS: DurableObjectNamespace;
  NATS_SESSION: DurableObjectNamespace;
  TENANTS: DurableObjectNamespace;
}
