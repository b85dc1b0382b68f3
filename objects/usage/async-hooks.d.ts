/**
 * The one Node.js API the broker uses (objects/usage/cost.ts), provided by
 * the runtime under `nodejs_compat` (wrangler.toml); typed here because the
 * project does not compile against Node's types.
 */
declare module "node:async_hooks" {
  /** Values that follow an asynchronous call chain (a request and everything it starts). */
  export class AsyncLocalStorage<T> {
    /** The value of the chain the caller runs in, or undefined. */
    getStore(): T | undefined;
    /** Runs `fn` with `store` as the value of its chain (and of everything it starts). */
    run<R>(store: T, fn: () => R): R;
  }
}
