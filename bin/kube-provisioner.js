#!/usr/bin/env node
// Launcher for the `kube-provisioner` command: runs the compiled JavaScript in dist/ (built by `npm run build`,
// which `npm install` runs through `prepare` in a git checkout). Development runs `tsx src/cli/main.ts`.
await import('../dist/cli/main.js');
