/**
 * Mailbox stubs kept by one long-lived caller (a NatsSession, whose events
 * all share one I/O context): `idFromName` + `get` once per mailbox instead
 * of once per request. Least recently used entries beyond `max` are
 * dropped; a stub whose call failed is dropped by the dispatcher
 * ({@link MailboxStubs.evict}) so that the next request gets a fresh one
 * (a stub can stay broken after its object was reset).
 *
 * The HTTP transport creates stubs per request (a Worker invocation may not
 * reuse another invocation's stubs) and does not use this.
 */
import type { Mailbox } from "../mailbox/Mailbox";
import type { Env } from "../env";
import { mailboxStub } from "../mailbox/stub";

/** Default number of cached stubs. */
export const MAILBOX_STUB_CACHE_SIZE = 256;

/** A mailbox stub and its cache key. */
export interface MailboxTarget {
  /** `tenant/address` (unique: tenants never contain "/"). */
  key: string;
  stub: DurableObjectStub<Mailbox>;
}

/** The stub of `address` in `tenant`, made fresh (no cache). */
export function freshMailboxTarget(env: Env, tenant: string, address: string): MailboxTarget {
  return { key: `${tenant}/${address}`, stub: mailboxStub(env, tenant, address) };
}

/** LRU cache of Mailbox stubs for one caller. */
export class MailboxStubs {
  private readonly stubs = new Map<string, DurableObjectStub<Mailbox>>();

  constructor(
    private readonly env: Env,
    private readonly max = MAILBOX_STUB_CACHE_SIZE,
  ) {}

  /** The target handed out last (most recently used already): a connection pipelining to one mailbox asks for it again and again. */
  private last: { tenant: string; address: string; target: MailboxTarget } | null = null;

  /** The cached (or a new) stub of `address` in `tenant`. */
  get(tenant: string, address: string): MailboxTarget {
    const last = this.last;
    if (last !== null && last.address === address && last.tenant === tenant) return last.target;
    const target = this.lookup(tenant, address);
    this.last = { tenant, address, target };
    return target;
  }

  private lookup(tenant: string, address: string): MailboxTarget {
    const key = `${tenant}/${address}`;
    const cached = this.stubs.get(key);
    if (cached) {
      this.stubs.delete(key); // re-insert: most recently used last
      this.stubs.set(key, cached);
      return { key, stub: cached };
    }
    const target = freshMailboxTarget(this.env, tenant, address);
    this.stubs.set(key, target.stub);
    if (this.stubs.size > this.max) this.stubs.delete(this.stubs.keys().next().value!);
    return target;
  }

  /** Forgets the stub of `key` (its call failed). */
  evict(key: string): void {
    this.stubs.delete(key);
    if (this.last?.target.key === key) this.last = null;
  }
}
