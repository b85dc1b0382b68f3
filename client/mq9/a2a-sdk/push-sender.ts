/**
 * A push-notification sender for `@a2a-js/sdk` servers that retries
 * (docs/a2a.md "A sender that retries"). The SDK's own
 * `DefaultPushNotificationSender` (1.3.0) makes one attempt per
 * notification and logs a failure: an update sent while the receiver is
 * down or restarting is lost, though the A2A specification asks servers to
 * retry. This one keeps each task's notifications in order and retries a
 * failed POST with exponential backoff (jitter) — for a network error, a
 * timeout, 408, 429 or 5xx; any other answer (401: wrong token, 400, 404,
 * 413) is final. A receiver that is idempotent, as a mailbox's is, stores a
 * re-sent notification once.
 *
 * Bodies are the A2A 1.0 form (`V1PushNotificationSerializer`,
 * `application/a2a+json`); the token goes in `X-A2A-Notification-Token`,
 * or `authentication` as `Authorization: <scheme> <credentials>`, as the
 * SDK's sender does.
 */
import { V1PushNotificationSerializer, type PushNotificationSender, type PushNotificationStore, type ServerCallContext } from "@a2a-js/sdk/server";
import type { StreamResponse, TaskPushNotificationConfig } from "@a2a-js/sdk";
import { Backoff, sleep } from "../backoff";

/** Options of {@link RetryingPushNotificationSender}. */
export interface RetryingPushSenderOptions {
  /** Attempts per notification and webhook before giving up (default 10). */
  maxAttempts?: number;
  /** First retry's delay bound, ms (default 250; doubles per attempt). */
  initialDelayMs?: number;
  /** Largest delay between attempts, ms (default 10 000). */
  maxDelayMs?: number;
  /** One attempt's time limit, ms (default 5 000). */
  timeoutMs?: number;
  /** Called for each failed attempt that will be retried after `delayMs`, and once with `delayMs` null when giving up. */
  onError?: (error: Error, info: { taskId: string; url: string; attempt: number; delayMs: number | null }) => void;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** An answer that says "try again later". */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** The task id a notification is about ("" for a message without a task: not sent). */
function taskIdOf(r: StreamResponse): string {
  const p = r.payload;
  if (!p) return "";
  return p.$case === "task" ? p.value.id : p.value.taskId;
}

/** Auth headers of a push config, as the SDK's sender builds them. */
function authHeaders(c: TaskPushNotificationConfig): Record<string, string> {
  if (c.authentication?.scheme && c.authentication.credentials) return { Authorization: `${c.authentication.scheme} ${c.authentication.credentials}` };
  return c.token ? { "X-A2A-Notification-Token": c.token } : {};
}

/**
 * A `PushNotificationSender` (pass it to `DefaultRequestHandler`) that
 * retries. `send()` resolves once the notification reached every webhook
 * of its task or attempts ran out (never rejects).
 */
export class RetryingPushNotificationSender implements PushNotificationSender {
  private readonly serializer = new V1PushNotificationSerializer();
  /** Per task: the tail of its notifications in flight (each waits for the one before). */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly store: PushNotificationStore,
    private readonly options: RetryingPushSenderOptions = {},
  ) {}

  send(streamResponse: StreamResponse, context: ServerCallContext, task?: Parameters<PushNotificationSender["send"]>[2]): Promise<void> {
    const taskId = taskIdOf(streamResponse);
    if (!taskId) return Promise.resolve();
    const { body, contentType } = this.serializer.serialize(streamResponse, task);
    // chained before any await: the order of send() calls is the order of delivery
    const prev = this.chains.get(taskId) ?? Promise.resolve();
    const next = prev.then(async () => {
      const configs = await this.store.load(taskId, context);
      await Promise.all(configs.map((c) => this.deliver(taskId, c, body, contentType)));
    }).catch(() => {});
    this.chains.set(taskId, next);
    return next.finally(() => {
      if (this.chains.get(taskId) === next) this.chains.delete(taskId);
    });
  }

  /** POSTs one body to one webhook, retrying as the options say. */
  private async deliver(taskId: string, c: TaskPushNotificationConfig, body: string, contentType: string): Promise<void> {
    const o = this.options;
    const max = o.maxAttempts ?? 10;
    const backoff = new Backoff(o.initialDelayMs ?? 250, o.maxDelayMs ?? 10_000);
    const doFetch = o.fetch ?? fetch;
    for (let attempt = 1; ; attempt++) {
      let error: Error;
      let retry = true;
      try {
        const res = await doFetch(c.url, {
          method: "POST", body, headers: { "Content-Type": contentType, ...authHeaders(c) }, signal: AbortSignal.timeout(o.timeoutMs ?? 5000),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) return;
        error = new Error(`HTTP ${res.status} from ${c.url}`);
        retry = retryableStatus(res.status);
      } catch (e) {
        error = e instanceof Error ? e : new Error(String(e));
      }
      if (!retry || attempt >= max) {
        o.onError?.(error, { taskId, url: c.url, attempt, delayMs: null });
        return;
      }
      const delayMs = backoff.next();
      o.onError?.(error, { taskId, url: c.url, attempt, delayMs });
      await sleep(delayMs);
    }
  }
}
