/**
 * Bindings and configuration the Worker and every Durable Object receive.
 * Declared by hand (not generated) so that vars are plain strings; keep in
 * sync with wrangler.toml.
 */
export interface Env {
  /** Comma-separated `token:tenant` pairs; empty/unset = open broker, tenant `default`. */
  AUTH_TOKENS?: string;
  /** Jurisdictions of statically configured tenants: `tenant=eu,other=fedramp` (objects/shared/jurisdiction.ts). */
  TENANT_JURISDICTION?: string;
  /**
   * Comma-separated browser origins (`https://app.example`; `*` = any) that
   * may call the broker besides its own origin; empty/unset = none, open
   * broker or not (worker/request-guard.ts, worker/cors.ts).
   */
  CORS_ORIGINS?: string;
  /**
   * Comma-separated issuer URLs of the OAuth authorization servers that
   * issue tokens for `/mcp`, published in its RFC 9728 metadata
   * (worker/mcp/discovery.ts); empty = the broker's own tokens only.
   */
  MCP_AUTHORIZATION_SERVERS?: string;
  /**
   * Comma-separated host names the broker answers to (`broker.example`,
   * `*.example` for subdomains, `*` for any; the port is not compared);
   * empty/unset = no Host check (a deployment: Cloudflare routes only the
   * Worker's own host names to it). `mortarmq dev` sets it to the loopback
   * names and the addresses it listens on (client/local/allowed-hosts.ts).
   */
  ALLOWED_HOSTS?: string;
  /**
   * "1": the launcher printed the auth mode at startup (`mortarmq dev` sets
   * it), so the Worker does not log its open-mode warning again on its first
   * request (objects/tenants/auth.ts OPEN_MODE_LOG). Unset on a deployment.
   */
  AUTH_MODE_ANNOUNCED?: string;
  /**
   * The address every client of the HTTP port has, when the port is a
   * loopback-only socket that tells the Worker no client address (set by
   * `mortarmq dev` for its direct socket on 127.0.0.1 / ::1,
   * client/local/miniflare-host.ts; unset on Cloudflare, whose edge sends
   * `CF-Connecting-IP`). NATS INFO `client_ip` falls back to it.
   */
  LOCAL_CLIENT_ADDRESS?: string;
  /**
   * Agent registry embedder (docs/agents.md): "auto" (default: Workers AI if
   * the AI binding exists, else EMBEDDINGS_URL if set, else built-in),
   * "workers-ai", "endpoint" or "builtin".
   */
  AGENT_EMBEDDER?: string;
  /** OpenAI-compatible embeddings URL (`…/v1/embeddings` or a base URL) for semantic DISCOVER. */
  EMBEDDINGS_URL?: string;
  /** Embedding model: default `@cf/baai/bge-m3` (Workers AI) / `bge-m3` (endpoint). */
  EMBEDDINGS_MODEL?: string;
  /** Bearer token for EMBEDDINGS_URL; a secret (`wrangler secret put EMBEDDINGS_API_KEY`). */
  EMBEDDINGS_API_KEY?: string;
  /** Workers AI binding, only when `[ai] binding = "AI"` is added to wrangler.toml. */
  AI?: import("./agents/embed/workers-ai").AiBinding;
  /** Read path (objects/shared/read-config.ts): work deadline per delivery, ms (default 30000). */
  MORTAR_ACK_WAIT_MS?: string;
  /** Read path: deliveries before dead-lettering (default 5). */
  MORTAR_MAX_DELIVERY_ATTEMPTS?: string;
  /** Read path: consumer group session timeout, ms (default 45000). */
  MORTAR_GROUP_SESSION_TIMEOUT_MS?: string;
  /** Read path: revocation timeout, ms (default 10000). */
  MORTAR_REVOCATION_TIMEOUT_MS?: string;
  /** MortarMQ: a connection without a successful CONNECT is closed this long after it opened, ms (default 10000; objects/session/timers.ts). */
  MORTAR_CONNECT_TIMEOUT_MS?: string;
  /**
   * Topic retention defaults (objects/shared/retention-config.ts, docs/protocol.md
   * "Topic retention"): max record age, ms (default 604800000 = 7 days; 0 = keep forever).
   */
  MORTAR_RETENTION_MS?: string;
  /** Retention default: max keys + values per partition, bytes (default 8589934592 = 8 GiB; 0 = no limit). */
  MORTAR_RETENTION_BYTES?: string;
  /** Retention default: max records per partition (default 0 = no limit). */
  MORTAR_RETENTION_MESSAGES?: string;
  /** Retention default: `old` (delete the oldest segments, default) or `new` (refuse PUBs while full). */
  MORTAR_RETENTION_DISCARD?: string;
  /** Largest partition_count a DECLARE may create (default 1024, at most 65535). */
  MORTAR_MAX_PARTITIONS_PER_TOPIC?: string;
  /** Partitions over all of a tenant's topics without a `partitions` quota (default 10000; objects/registry/config.ts). */
  MORTAR_PARTITIONS_PER_TENANT?: string;
  /** Consumer groups per topic (default 1000; objects/registry/config.ts). */
  MORTAR_MAX_GROUPS_PER_TOPIC?: string;
  /**
   * Operator token (a secret: `wrangler secret put ADMIN_TOKEN`): `Authorization: Bearer`
   * for /metrics (all tenants), /stats of any tenant and /admin/* (docs/operations.md).
   */
  ADMIN_TOKEN?: string;
  /**
   * Tenants (docs/tenants.md): how often an open connection re-checks its
   * token and renews its connection lease, ms (default 30000) — the bound
   * within which a revoked token's open connections close.
   */
  TENANT_REVALIDATE_MS?: string;
  /**
   * mq9 (objects/tenants/mailbox-limits.ts, docs/tenants.md "Default limits"):
   * mailbox CREATEs per second per tenant without a `mailbox_creates_per_s`
   * quota (default 20; bursts of 10 s of it).
   */
  MQ9_MAILBOX_CREATES_PER_S?: string;
  /** mq9: mailboxes per tenant without a `mailboxes` quota (default 10000). */
  MQ9_MAILBOXES_PER_TENANT?: string;
  /** mq9: bytes one mailbox stores at most (default 1073741824 = 1 GiB; 0 = no limit; objects/mailbox/byte-cap.ts). */
  MQ9_MAILBOX_MAX_BYTES?: string;
  /** Tenants: how long an isolate trusts a good issued-token check for HTTP requests, ms (default 5000; 0 = ask every time; objects/tenants/token-cache.ts). */
  TOKEN_CACHE_MS?: string;
  /** Tenants: how long an isolate uses a static or open tenant's quota state for HTTP before asking again, ms (default 5000; 0 = every request; worker/quota.ts). */
  TENANT_STATE_MS?: string;
  /** Tenants: how long after a delete the purge of its data starts, ms (default 5 × TENANT_REVALIDATE_MS + 10 s). */
  TENANT_PURGE_DELAY_MS?: string;
  /** Counting pipeline: how often each object reports its counters, ms (default 10000; docs/operations.md). */
  TELEMETRY_FLUSH_MS?: string;
  /** NATS (docs/nats.md "Slow consumers"): bytes a connection may have sent and not yet known read (default 67108864 = 64 MiB, nats-server's max_pending). */
  NATS_MAX_PENDING_BYTES?: string;
  /** NATS: how long a flow-control PING may stay unanswered before the connection is a slow consumer, ms (default 10000, nats-server's write_deadline). */
  NATS_WRITE_DEADLINE_MS?: string;
  /** Push delivery (docs/push.md): `1` allows endpoints on loopback hosts, http:// included (`mortarmq dev` sets it). */
  PUSH_ALLOW_LOOPBACK?: string;
  /** Push delivery: comma-separated hosts endpoints must be on (`*.example.com` = its subdomains); empty = any public host. */
  PUSH_ALLOWED_HOSTS?: string;
  /** Push delivery: wait after the first failed attempt, ms (default 1000; doubles per attempt, jittered). */
  PUSH_BACKOFF_BASE_MS?: string;
  /** Push delivery: longest wait between attempts, ms (default 600000). */
  PUSH_BACKOFF_MAX_MS?: string;
  /** Push delivery: push subscriptions per tenant (default 100). */
  PUSH_MAX_SUBSCRIPTIONS?: string;
  /** Push delivery: push attempts per second per tenant (default 1000). */
  PUSH_MAX_ATTEMPTS_PER_S?: string;
  /** Push subrequests (attempts, dead-letter copies, leases) per Mailbox alarm invocation (default 500, at most 1000; shared/push-config.ts). */
  PUSH_SUBREQUESTS_PER_RUN?: string;
  /** MortarMQ connections, one object per WebSocket (objects/session/). */
  SESSION: DurableObjectNamespace<import("./session/MortarSession").MortarSession>;
  /** Per-tenant topic registries (objects/registry/). */
  REGISTRY: DurableObjectNamespace<import("./registry/TopicRegistry").TopicRegistry>;
  /** Topic partitions (objects/partition/). */
  PARTITION: DurableObjectNamespace<import("./partition/Partition").Partition>;
  /** Consumer groups (objects/group/). */
  GROUP: DurableObjectNamespace<import("./group/ConsumerGroup").ConsumerGroup>;
  /** mq9 mailboxes (objects/mailbox/). */
  MAILBOX: DurableObjectNamespace<import("./mailbox/Mailbox").Mailbox>;
  /** Per-tenant agent registries (objects/agents/). */
  AGENTS: DurableObjectNamespace<import("./agents/AgentRegistry").AgentRegistry>;
  /** NATS connections, one object per WebSocket (objects/nats/). */
  NATS_SESSION: DurableObjectNamespace<import("./nats/NatsSession").NatsSession>;
  /** Tenant directory: one object per tenant and the index (objects/tenants/). */
  TENANTS: DurableObjectNamespace<import("./tenants/TenantDirectory").TenantDirectory>;
  /** Per-tenant mq9 mailbox lists (objects/mailbox-index/). */
  MAILBOX_INDEX: DurableObjectNamespace<import("./mailbox-index/MailboxIndex").MailboxIndex>;
  /** The web console's bundled files (wrangler.toml `[assets]`, dist/console/; worker/console/assets.ts). */
  ASSETS?: Fetcher;
  /** Per-tenant usage aggregators and the tenant index (objects/usage/). */
  USAGE: DurableObjectNamespace<import("./usage/UsageAggregator").UsageAggregator>;
}
