// deploy/Dockerfile read as text (no docker engine here): the final image is built from dist/ with production
// dependencies only, compiles no native module, runs as a non-root user, and runs the compiled command.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../cli/cli-helpers.ts';

const text = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
const instructions = text.split('\n').filter((l) => l.trim() && !l.trimStart().startsWith('#'));
const stages = instructions
  .join('\n')
  .split(/^FROM /m)
  .slice(1)
  .map((s) => `FROM ${s}`);

test('the Dockerfile builds dist in one stage and ships it with production dependencies only', () => {
  const final = stages.at(-1) ?? '';
  assert.ok(stages.length >= 2, 'a build stage and a final stage');
  assert.match(stages.join('\n'), /npm run build/);
  assert.match(stages.join('\n'), /npm ci --omit=dev --omit=optional --ignore-scripts/);
  assert.match(final, /COPY --from=\w+ .*\/app\/dist \.\/dist/);
  assert.doesNotMatch(final, /COPY[^\n]* src\b/, 'no TypeScript sources in the image');
  assert.doesNotMatch(final, /^RUN /m, 'nothing is installed or compiled in the final stage');
  assert.doesNotMatch(text, /apt-get|g\+\+|python3/, 'no native toolchain anywhere');
  assert.match(final, /^USER node$/m, 'runs as non-root');
  assert.match(final, /^ENTRYPOINT \["node", "\/app\/bin\/kube-provisioner\.js"\]$/m);
  // The entry point runs the compiled JavaScript, not tsx.
  assert.match(
    readFileSync(join(ROOT, 'bin', 'kube-provisioner.js'), 'utf8'),
    /new URL\('\.\.\/dist\/cli\/main\.js', import\.meta\.url\)/,
  );
});

const PROTOBUFJS = 'node_modules/protobufjs';

test('the production dependencies the image installs need no native build', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    optionalDependencies?: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  // The one native module is optional, and the image omits optional dependencies.
  assert.deepEqual(Object.keys(pkg.optionalDependencies ?? {}), ['better-sqlite3']);
  assert.equal(pkg.dependencies['better-sqlite3'], undefined);
  for (const name of ['tsx', '@kubernetes/client-node', 'typescript']) {
    assert.equal(pkg.dependencies[name], undefined, `${name} is not a production dependency`);
    assert.ok(pkg.devDependencies[name], `${name} stays a dev dependency`);
  }
  // Every production dependency is plain JavaScript: no install script in the lockfile but protobufjs's (through
  // @grpc/grpc-js), a JavaScript version note that builds nothing; the image installs with --ignore-scripts.
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; optional?: boolean; hasInstallScript?: boolean }>;
  };
  const scripted = Object.entries(lock.packages)
    .filter(([path, p]) => path && !p.dev && !p.optional && p.hasInstallScript)
    .map(([path]) => path);
  assert.deepEqual(scripted, [PROTOBUFJS]);
  const script = JSON.parse(readFileSync(join(ROOT, PROTOBUFJS, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
    gypfile?: boolean;
  };
  assert.deepEqual(
    script.scripts.postinstall,
    'node scripts/postinstall',
    'protobufjs runs its JavaScript note, no native build',
  );
  assert.ok(!script.gypfile && !existsSync(join(ROOT, PROTOBUFJS, 'binding.gyp')));
});
