// Types `env` from "cloudflare:test" as the Worker's Env (objects/env.ts).
type WorkerEnv = import("../../objects/env").Env;
declare namespace Cloudflare {
  interface Env extends WorkerEnv {}
}
