// Loads the embedded cluster's optional peer dependencies (better-sqlite3 for --data-dir persistence,
// @peculiar/x509 + reflect-metadata for its TLS certificates) only when they are used, so that installing the
// package for the library or for `run hostpath` compiles no native module. A missing one is a typed error
// that names the package to install.
import { createRequire } from 'node:module';

const requireFromHere = createRequire(import.meta.url);

/** An optional peer dependency is needed for the feature in use but is not installed. */
export class MissingDependencyError extends Error {
  override readonly name = 'MissingDependencyError';
  constructor(
    readonly packageName: string,
    readonly neededFor: string,
    options?: ErrorOptions,
  ) {
    super(
      `${neededFor} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\``,
      options,
    );
  }
}

/** `require()`s an optional CommonJS peer dependency; throws MissingDependencyError when it is absent. */
export function requireOptional<T>(packageName: string, neededFor: string): T {
  return missingAsTyped(packageName, neededFor, () => requireFromHere(packageName) as T);
}

/** Checks that an optional peer dependency is installed, without loading it. */
export function resolveOptional(packageName: string, neededFor: string): void {
  missingAsTyped(packageName, neededFor, () => requireFromHere.resolve(packageName));
}

function missingAsTyped<T>(packageName: string, neededFor: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // Only the package itself being absent is "missing"; a broken install (e.g. a native addon built for
    // another Node) keeps its own error.
    if (e.code === 'MODULE_NOT_FOUND' && e.message.includes(`'${packageName}'`)) {
      throw new MissingDependencyError(packageName, neededFor, { cause: err });
    }
    throw err;
  }
}
