/** Stylesheets are bundled by esbuild (client/scripts/build-console.ts) into the page's one CSS file. */
declare module "*.css";
