/**
 * The CONNECT options this broker understands (nats-server ClientOpts
 * names). Fields it does not know are ignored; a known field of the wrong
 * type makes CONNECT fail, as Go's json.Unmarshal does in nats-server.
 */
import { z } from "zod";
import { NatsErr, NatsProtocolError, fatal } from "./errors";

const ConnectSchema = z.looseObject({
  verbose: z.boolean().optional(),
  pedantic: z.boolean().optional(),
  echo: z.boolean().optional(),
  headers: z.boolean().optional(),
  no_responders: z.boolean().optional(),
  auth_token: z.string().optional(),
  user: z.string().optional(),
  pass: z.string().optional(),
  protocol: z.number().int().optional(),
  name: z.string().optional(),
  lang: z.string().optional(),
  version: z.string().optional(),
});

/** Parsed CONNECT options; absent fields keep the connection's current value. */
export type ConnectOptions = z.infer<typeof ConnectSchema>;

/**
 * Parses the JSON argument of CONNECT. Returns the options, or a fatal
 * error: `processConnect Parse Error: …` for bad JSON / field types, or
 * `invalid client protocol` for `protocol` outside 0..1.
 */
export function parseConnect(json: string): ConnectOptions | NatsProtocolError {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return fatal(`processConnect Parse Error: CONNECT argument is not JSON`);
  }
  const r = ConnectSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue.path.length ? `field ${JSON.stringify(issue.path.join("."))}` : "CONNECT argument";
    return fatal(`processConnect Parse Error: ${where}: ${issue.message}`);
  }
  if (r.data.protocol !== undefined && (r.data.protocol < 0 || r.data.protocol > 1)) {
    return fatal(NatsErr.BadClientProtocol);
  }
  return r.data;
}

/**
 * The token a client presents: `auth_token`, else `pass` (user/pass where
 * the password is a token; the user name is ignored). Undefined when none
 * is given.
 */
export function connectToken(opts: ConnectOptions): string | undefined {
  return opts.auth_token || opts.pass || undefined;
}
