// A focused kubeconfig model: parses kubeconfig files (YAML or JSON), merges several as kubectl does, selects a
// context, and turns the chosen cluster and user into Node TLS options and an Authorization header. It covers
// what controllers use (CA data/file, insecure-skip-tls-verify, tls-server-name, client certificates as data or
// files, token and tokenFile, basic auth, impersonation, exec credential plugins, the in-cluster service
// account with token reload) and refuses the rest (auth-provider, proxy-url) by name, so that reading a
// kubeconfig does not load all of @kubernetes/client-node (about 70 MB on plain node).
import type https from 'node:https';
import { readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ExecCredentialPlugin, type ExecConfig } from './exec-credential.ts';

/** The configuration cannot be read or uses something this loader does not support. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** A cluster entry, with file paths made absolute against the kubeconfig that named them. */
export interface RestCluster {
  name: string;
  /** API server URL without a trailing slash. */
  server: string;
  /** Base64 PEM, as `certificate-authority-data`. */
  caData?: string;
  caFile?: string;
  skipTLSVerify: boolean;
  tlsServerName?: string;
  /** Never set by this loader (proxy-url is refused); present for KubeClient's shape check. */
  proxyUrl?: string;
}

/** A user entry (credentials), paths absolute. */
export interface RestUser {
  name: string;
  token?: string;
  tokenFile?: string;
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
  username?: string;
  password?: string;
  impersonate?: string;
  exec?: ExecConfig;
}

/** A context: which cluster, which user, which default namespace. */
export interface RestContext {
  name: string;
  cluster: string;
  user: string;
  namespace?: string;
}

type Raw = Record<string, unknown>;
const obj = (v: unknown): Raw => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const abs = (root: string, p: string | undefined) => (p === undefined || isAbsolute(p) ? p : resolve(root, p));
/** How long a token or certificate read from a file is used before the file is read again (client-go's cache period for tokens). */
const TOKEN_FILE_TTL_MS = 60_000;

/**
 * The connection settings of one kubeconfig (or several merged): what {@link KubeClient} needs, and nothing of
 * client-node. The same two methods client-node's KubeConfig offers, so either can be given to KubeClient.
 */
export class RestConfig {
  readonly clusters: RestCluster[] = [];
  readonly users: RestUser[] = [];
  readonly contexts: RestContext[] = [];
  currentContext = '';
  private readonly tokenCache = new Map<string, { token: string; readAt: number }>();
  private readonly fileCache = new Map<string, { data: Buffer; readAt: number }>();
  /** Base64 kubeconfig values (CA, client certificate and key data), decoded once. */
  private readonly decodedData = new Map<string, Buffer>();
  private readonly plugins = new Map<string, ExecCredentialPlugin>();

  /** @param now - the clock of the token-file cache (tests pass a fake one). */
  constructor(private readonly now: () => number = Date.now) {}

  /** Parses one kubeconfig document; relative paths resolve against `rootDirectory`. Entries already present win. */
  addFromString(text: string, rootDirectory: string, source = 'kubeconfig'): void {
    let doc: Raw;
    try {
      doc = obj(parseYaml(text));
    } catch (err) {
      throw new KubeConfigError(`${source}: not valid YAML: ${(err as Error).message}`);
    }
    const list = (key: string) => (Array.isArray(doc[key]) ? (doc[key] as unknown[]) : []).map(obj);
    for (const [i, e] of list('clusters').entries()) {
      const c = obj(e.cluster);
      const name = str(e.name);
      const server = str(c.server);
      if (!name || !server) throw new KubeConfigError(`${source}: clusters[${i}] needs a name and cluster.server`);
      if (str(c['proxy-url'])) throw new KubeConfigError(`${source}: cluster ${name}: proxy-url is not supported`);
      if (this.clusters.some((x) => x.name === name)) continue;
      this.clusters.push({
        name,
        server: server.replace(/\/$/, ''),
        caData: str(c['certificate-authority-data']),
        caFile: abs(rootDirectory, str(c['certificate-authority'])),
        skipTLSVerify: c['insecure-skip-tls-verify'] === true,
        tlsServerName: str(c['tls-server-name']),
      });
    }
    for (const [i, e] of list('users').entries()) this.addUser(e, i, rootDirectory, source);
    for (const [i, e] of list('contexts').entries()) {
      const c = obj(e.context);
      const name = str(e.name);
      if (!name) throw new KubeConfigError(`${source}: contexts[${i}] needs a name`);
      if (this.contexts.some((x) => x.name === name)) continue;
      this.contexts.push({ name, cluster: str(c.cluster) ?? '', user: str(c.user) ?? '', namespace: str(c.namespace) });
    }
    this.currentContext ||= str(doc['current-context']) ?? '';
  }

  private addUser(e: Raw, i: number, root: string, source: string): void {
    const u = obj(e.user);
    const name = str(e.name);
    if (!name) throw new KubeConfigError(`${source}: users[${i}] needs a name`);
    if (u['auth-provider'] !== undefined)
      throw new KubeConfigError(`${source}: user ${name}: auth-provider is not supported (use an exec plugin)`);
    if (this.users.some((x) => x.name === name)) return;
    const exec = u.exec === undefined ? undefined : parseExec(obj(u.exec), `${source}: user ${name}`);
    this.users.push({
      name,
      token: str(u.token),
      tokenFile: abs(root, str(u.tokenFile) ?? str(u['token-file'])),
      certData: str(u['client-certificate-data']),
      certFile: abs(root, str(u['client-certificate'])),
      keyData: str(u['client-key-data']),
      keyFile: abs(root, str(u['client-key'])),
      username: str(u.username),
      password: str(u.password),
      impersonate: str(u.as),
      exec,
    });
  }

  /** Reads and adds one kubeconfig file. */
  addFromFile(file: string): void {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new KubeConfigError(`kubeconfig ${file} cannot be read: ${(err as Error).message}`);
    }
    this.addFromString(text, dirname(resolve(file)), `kubeconfig ${file}`);
  }

  /** Adds the in-cluster configuration: the service's address and the mounted service-account files. */
  addInCluster(env: NodeJS.ProcessEnv, saDir: string): void {
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT ?? '443';
    if (!host) throw new KubeConfigError('in-cluster config needs KUBERNETES_SERVICE_HOST');
    const h = host.includes(':') ? `[${host}]` : host;
    this.clusters.push({
      name: 'inCluster',
      server: `https://${h}:${port}`,
      caFile: `${saDir}/ca.crt`,
      skipTLSVerify: false,
    });
    this.users.push({ name: 'inClusterUser', tokenFile: `${saDir}/token` });
    let namespace: string | undefined;
    try {
      namespace = readFileSync(`${saDir}/namespace`, 'utf8').trim() || undefined;
    } catch {
      namespace = undefined;
    }
    this.contexts.push({ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', namespace });
    this.currentContext ||= 'inClusterContext';
  }

  /** Switches context; throws KubeConfigError for an unknown name. */
  setCurrentContext(name: string): void {
    if (!this.contexts.some((c) => c.name === name))
      throw new KubeConfigError(`context ${name} not found in the kubeconfig`);
    this.currentContext = name;
  }

  getCurrentContextObject(): RestContext | null {
    return this.contexts.find((c) => c.name === this.currentContext) ?? null;
  }

  getCurrentCluster(): RestCluster | null {
    const ctx = this.getCurrentContextObject();
    return (ctx && this.clusters.find((c) => c.name === ctx.cluster)) ?? null;
  }

  getCurrentUser(): RestUser | null {
    const ctx = this.getCurrentContextObject();
    return (ctx && this.users.find((u) => u.name === ctx.user)) ?? null;
  }

  /** Fills TLS options, basic auth, impersonation and the Authorization header (running an exec plugin if any). */
  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    if (!opts.headers || Array.isArray(opts.headers)) opts.headers = {};
    const headers = opts.headers as Record<string, string>;
    if (cluster) {
      if (cluster.skipTLSVerify) opts.rejectUnauthorized = false;
      if (cluster.tlsServerName) opts.servername = cluster.tlsServerName;
      const ca = this.dataOrFile(cluster.caData, cluster.caFile);
      if (ca) opts.ca = ca;
    }
    if (!user) return;
    const cert = this.dataOrFile(user.certData, user.certFile);
    const key = this.dataOrFile(user.keyData, user.keyFile);
    if (cert) opts.cert = cert;
    if (key) opts.key = key;
    if (user.impersonate) headers['Impersonate-User'] = user.impersonate;
    if (user.username) opts.auth = `${user.username}:${user.password ?? ''}`;
    let token = user.token ?? (user.tokenFile ? this.fileToken(user.tokenFile) : undefined);
    if (user.exec) {
      const cred = await this.plugin(user).credential();
      token = cred.token ?? token;
      if (cred.clientCertificateData) opts.cert = Buffer.from(cred.clientCertificateData);
      if (cred.clientKeyData) opts.key = Buffer.from(cred.clientKeyData);
    }
    if (token) headers.Authorization = `Bearer ${token}`;
  }

  private plugin(user: RestUser): ExecCredentialPlugin {
    let p = this.plugins.get(user.name);
    if (!p) {
      p = new ExecCredentialPlugin(user.exec as ExecConfig);
      this.plugins.set(user.name, p);
    }
    return p;
  }

  /**
   * Inline base64 data, or a file's content. Files (CA, client certificate and key) are read at most once a
   * minute: this runs on every request, and a rotated certificate still gets picked up.
   */
  private dataOrFile(data: string | undefined, file: string | undefined): Buffer | undefined {
    if (data) {
      // Called for every request: decode each kubeconfig value once.
      let decoded = this.decodedData.get(data);
      if (!decoded) this.decodedData.set(data, (decoded = Buffer.from(data, 'base64')));
      return decoded;
    }
    if (!file) return undefined;
    const cached = this.fileCache.get(file);
    if (cached && this.now() - cached.readAt < TOKEN_FILE_TTL_MS) return cached.data;
    try {
      if (!statSync(file).isFile()) throw new Error('not a file');
      const read = readFileSync(file);
      this.fileCache.set(file, { data: read, readAt: this.now() });
      return read;
    } catch (err) {
      throw new KubeConfigError(`${file} cannot be read: ${(err as Error).message}`);
    }
  }

  /** Token from a file, re-read after a minute so that rotated (bound service-account) tokens are picked up. */
  private fileToken(file: string): string {
    const cached = this.tokenCache.get(file);
    if (cached && this.now() - cached.readAt < TOKEN_FILE_TTL_MS) return cached.token;
    try {
      const token = readFileSync(file, 'utf8').trim();
      this.tokenCache.set(file, { token, readAt: this.now() });
      return token;
    } catch (err) {
      if (cached) return cached.token; // a rotation in progress: keep the last good token
      throw new KubeConfigError(`token file ${file} cannot be read: ${(err as Error).message}`);
    }
  }
}

function parseExec(e: Raw, where: string): ExecConfig {
  const command = str(e.command);
  if (!command) throw new KubeConfigError(`${where}: exec needs a command`);
  const apiVersion = str(e.apiVersion) ?? '';
  if (!/^client\.authentication\.k8s\.io\/(v1|v1beta1)$/.test(apiVersion)) {
    throw new KubeConfigError(
      `${where}: exec apiVersion ${apiVersion || '(none)'} is not supported (client.authentication.k8s.io/v1 or v1beta1)`,
    );
  }
  const args = Array.isArray(e.args) ? e.args.map(String) : [];
  const env = (Array.isArray(e.env) ? e.env : [])
    .map(obj)
    .map((x) => ({ name: String(x.name ?? ''), value: String(x.value ?? '') }));
  if (e.interactiveMode === 'Always')
    throw new KubeConfigError(`${where}: exec plugins with interactiveMode Always cannot run in a controller`);
  return { command, args, env, apiVersion };
}
