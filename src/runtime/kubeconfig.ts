// Where the client's credentials come from: an explicit kubeconfig, $KUBECONFIG, ~/.kube/config, or the
// in-cluster service account. The order is controller-runtime's (explicit first), not client-node's
// loadFromDefault, and a missing configuration is an error rather than a silent http://localhost:8080.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

/** Path of the service-account token mounted into pods. */
export const SERVICE_ACCOUNT_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

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
 * Loads a KubeConfig: `path`, then `$KUBECONFIG` (all files, merged by client-node), then `~/.kube/config`,
 * then in-cluster when the service-account token exists. In-cluster configs re-read the token file every
 * 60 s (client-node's FileAuth), so bound-token rotation needs nothing from us. Throws KubeConfigError when
 * nothing applies.
 */
export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): { kubeConfig: KubeConfig; source: KubeConfigSource } {
  const env = opts.env ?? process.env;
  const kc = new KubeConfig();
  let source: KubeConfigSource;
  if (opts.inCluster === true) {
    loadInCluster(kc, env, opts.inClusterPathPrefix);
    source = 'in-cluster';
  } else if (opts.path) {
    if (!existsSync(opts.path)) throw new KubeConfigError(`kubeconfig ${opts.path} does not exist`);
    kc.loadFromFile(opts.path);
    source = 'path';
  } else if (env.KUBECONFIG) {
    // Like kubectl: every listed file, merged, the first one's current-context winning.
    const files = env.KUBECONFIG.split(delimiter).filter(Boolean);
    kc.loadFromFile(files[0]);
    for (const file of files.slice(1)) {
      const next = new KubeConfig();
      next.loadFromFile(file);
      kc.mergeConfig(next, true);
    }
    source = 'KUBECONFIG';
  } else if (existsSync(join(opts.home ?? homedir(), '.kube', 'config'))) {
    kc.loadFromFile(join(opts.home ?? homedir(), '.kube', 'config'));
    source = 'home';
  } else if (opts.inCluster !== false && existsSync((opts.inClusterPathPrefix ?? '') + SERVICE_ACCOUNT_TOKEN_PATH)) {
    loadInCluster(kc, env, opts.inClusterPathPrefix);
    source = 'in-cluster';
  } else {
    throw new KubeConfigError('no kubeconfig: pass a path, set KUBECONFIG, create ~/.kube/config, or run in a pod');
  }
  if (opts.context) kc.setCurrentContext(opts.context);
  if (!kc.getCurrentCluster()) throw new KubeConfigError(`kubeconfig (${source}) has no current cluster`);
  return { kubeConfig: kc, source };
}

function loadInCluster(kc: KubeConfig, env: NodeJS.ProcessEnv, prefix = ''): void {
  if (!env.KUBERNETES_SERVICE_HOST) throw new KubeConfigError('in-cluster config needs KUBERNETES_SERVICE_HOST');
  kc.loadFromCluster(prefix);
}
