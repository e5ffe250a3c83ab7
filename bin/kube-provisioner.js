#!/usr/bin/env node
// Launcher for the `kube-provisioner` command: runs the compiled JavaScript in dist/, which the published package
// ships (built by `prepack`) and which `npm install` / `npm ci` build in a checkout (the `dependencies` script).
// Development runs `tsx src/cli/main.ts`.
import { existsSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(
    'kube-provisioner: dist/ is missing (a checkout that was not built): run `npm run build` in the repository.\n',
  );
  process.exit(1);
}
await import(main.href);
