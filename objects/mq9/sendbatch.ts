/**
 * SEND coalescing for one client connection: SENDs to the same mailbox
 * issued in the same synchronous run (e.g. the 32 PUBs of one NATS
 * WebSocket message from a pipelining client) go to the Mailbox as ONE
 * `sendMany` RPC instead of one RPC each. Each caller still gets its own
 * result, in order; nothing is delayed beyond the current microtask
 * checkpoint, and durability is unchanged (the Mailbox answers only after
 * the commit holding the SENDs).
 *
 * Use one instance per connection (NatsSession). The HTTP transport has one
 * request per invocation and does not use it.
 *
 * Order: a connection's requests must reach a Mailbox in the order the
 * client sent them (a QUERY pipelined after a SEND sees it). Before any
 * other RPC to a mailbox the dispatcher calls {@link SendCoalescer.flush},
 * so the SENDs queued before it are issued first on the same stub (calls on
 * one stub are delivered in order). A request that must wait before it can
 * be issued (a SEND waiting for a publish-rate lease, a CREATE for the
 * mailbox-count check) goes through {@link SendCoalescer.inOrder}: the
 * connection's later requests to that mailbox are issued after it.
 */
import type { Mailbox } from "../mailbox/Mailbox";
import type { SendResult } from "../mailbox/rpc";
import type { Mq9SendOptions } from "../../wire/mq9";

interface Pending {
  stub: DurableObjectStub<Mailbox>;
  address: string;
  items: { opts: Mq9SendOptions; payload: Uint8Array }[];
  waiters: { resolve: (r: SendResult) => void; reject: (e: unknown) => void }[];
}

/** A request refused before it was issued (by a tenant quota). */
export interface Refused<T> {
  refused: T;
}

/** Coalesces same-mailbox SENDs of one microtask checkpoint into one `Mailbox.sendMany` call. */
export class SendCoalescer {
  private pending = new Map<string, Pending>();
  /** Per mailbox key: settles when the last waiting request of this connection has been issued. */
  private turns = new Map<string, Promise<void>>();

  /**
   * Issues one request to mailbox `key` in this connection's order.
   * `issue` must issue its RPC synchronously (queue the SEND, or flush and
   * call the stub) and return the reply. `admission`: a check the request
   * must pass first (null/undefined = none pending); a truthy answer
   * refuses it unissued. Runs `issue` at once when nothing of this
   * connection waits for `key`; otherwise after every earlier request to
   * `key` was issued. Rejects when `issue` throws or the RPC fails.
   */
  inOrder<R, T>(key: string, issue: () => Promise<R>, admission?: Promise<T | null> | null): Promise<R | Refused<T>> {
    const prev = this.turns.get(key);
    if (!prev && !admission) return issue();
    let result: Promise<R | Refused<T>> | undefined;
    const ready = (prev ?? Promise.resolve())
      .then(() => admission ?? null)
      .then((refused) => {
        result = refused ? Promise.resolve({ refused }) : issue();
      });
    const turn = ready.then(
      () => {},
      () => {},
    );
    this.turns.set(key, turn);
    void turn.then(() => {
      if (this.turns.get(key) === turn) this.turns.delete(key);
    });
    return ready.then(() => result!);
  }

  /**
   * Queues a SEND to `address` (object name `key`, stub `stub`). Resolves
   * with that SEND's result; rejects when the RPC itself fails (platform
   * error), for every SEND of the batch.
   */
  send(key: string, stub: DurableObjectStub<Mailbox>, address: string, opts: Mq9SendOptions, payload: Uint8Array): Promise<SendResult> {
    let p = this.pending.get(key);
    if (!p) {
      p = { stub, address, items: [], waiters: [] };
      this.pending.set(key, p);
      queueMicrotask(() => this.flush(key));
    }
    p.items.push({ opts, payload });
    return new Promise<SendResult>((resolve, reject) => p.waiters.push({ resolve, reject }));
  }

  /** Issues the SENDs queued for `key` now (no-op when none are queued). */
  flush(key: string): void {
    const p = this.pending.get(key);
    if (!p) return;
    this.pending.delete(key);
    const call =
      p.items.length === 1
        ? Promise.resolve(p.stub.send(p.address, p.items[0].opts, p.items[0].payload)).then((r) => [r as SendResult])
        : Promise.resolve(p.stub.sendMany(p.address, p.items)).then((rs) => rs as SendResult[]);
    call.then(
      (results) => p.waiters.forEach((w, i) => w.resolve(results[i])),
      (e: unknown) => p.waiters.forEach((w) => w.reject(e)),
    );
  }
}
