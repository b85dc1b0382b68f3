import { register } from "tsx/esm/api";
register();
await import("/tmp/h1-bench/ab.ts");
