#!/usr/bin/env node
// `mortarmq` CLI launcher: the CLI is TypeScript (sharing wire/ with the
// Worker), loaded through tsx so no build step is needed.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../cli/main.ts");
await main(process.argv);
