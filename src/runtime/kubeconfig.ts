// Where the client's credentials come from: an explicit kubeconfig, $KUBECONFIG, ~/.kube/config, or the
// in-cluster service account. The order is controller-runtime's (explicit first), not client-node's
// loadFromDefault, and a missing configuration is an error rather than a silent http://localhost:8080.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { KubeConfigError, RestConfig } from './rest-config.ts';

/** Path of the service-account token mounted into pods. */
export const SERVICE_ACCOUNT_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Where loadKubeConfig looks for a configuration, and the context to use. */
export interface LoadKubeConfigOptions {
  /** Explicit kubeconfig file (e.g. `--kubeconfig`); wins over everything else. */
  path?: string;
  /** Context to use instead of the file's current-context. */
  context?: string;
  /** Force in-cluster configuration (service account); `false` never tries it. Default: tried last. */
  inCluster?: boolean;
  /** Environment to read KUBECONFIG / KUBERNETES_SERVICE_HOST from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Home directory for ~/.kube/config (default os.homedir()). */
  home?: string;
  /** Prefix for the service-account files (tests). */
  inClusterPathPrefix?: string;
}

/** Where a loaded configuration came from, for logs. */
export type KubeConfigSource = 'path' | 'KUBECONFIG' | 'home' | 'in-cluster';

/**
 * Loads the connection settings: `path`, then `$KUBECONFIG` (all files, merged as kubectl does: the first
 * file to name an entry or a current-context wins), then `~/.kube/config`, then in-cluster when the
 * service-account token exists. Token files (in-cluster included) are re-read every 60 s, so bound-token
 * rotation needs nothing from the caller. Throws KubeConfigError when nothing applies; a kubeconfig that does
 * not exist gets the same message whether it was named by `path` or by KUBECONFIG.
 */
export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): { kubeConfig: RestConfig; source: KubeConfigSource } {
  const env = opts.env ?? process.env;
  const kc = new RestConfig();
  const saDir = dirname((opts.inClusterPathPrefix ?? '') + SERVICE_ACCOUNT_TOKEN_PATH);
  const home = join(opts.home ?? homedir(), '.kube', 'config');
  let source: KubeConfigSource;
  if (opts.inCluster === true) {
    kc.addInCluster(env, saDir);
    source = 'in-cluster';
  } else if (opts.path) {
    kc.addFromFile(mustExist([opts.path]));
    source = 'path';
  } else if (env.KUBECONFIG) {
    // Like kubectl: every listed file that exists, merged; only a list naming no existing file is an error.
    const files = env.KUBECONFIG.split(delimiter).filter(Boolean);
    const present = files.filter((f) => existsSync(f));
    if (present.length === 0) mustExist(files);
    for (const file of present) kc.addFromFile(file);
    source = 'KUBECONFIG';
  } else if (existsSync(home)) {
    kc.addFromFile(home);
    source = 'home';
  } else if (opts.inCluster !== false && existsSync(join(saDir, 'token'))) {
    kc.addInCluster(env, saDir);
    source = 'in-cluster';
  } else {
    throw new KubeConfigError('no kubeconfig: pass a path, set KUBECONFIG, create ~/.kube/config, or run in a pod');
  }
  if (opts.context) kc.setCurrentContext(opts.context);
  if (!kc.getCurrentCluster()) throw new KubeConfigError(`kubeconfig (${source}) has no current cluster`);
  return { kubeConfig: kc, source };
}

/** The one message for a kubeconfig that is not there, however it was named. */
function mustExist(files: string[]): string {
  if (!files.every((f) => existsSync(f)))
    throw new KubeConfigError(`kubeconfig ${files.join(delimiter)} does not exist`);
  return files[0];
}
