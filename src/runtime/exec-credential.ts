// Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1): runs the kubeconfig's command, reads
// the ExecCredential it prints, and caches the credential until its expirationTimestamp (or forever when it
// has none, as client-go does). Concurrent callers share one running command.
import { execFile } from 'node:child_process';

/** The `exec` block of a kubeconfig user. */
export interface ExecConfig {
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  apiVersion: string;
}

/** What a plugin returns: a bearer token and/or a client certificate (PEM). */
export interface ExecCredentialStatus {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

/** The plugin failed to run or printed something that is not an ExecCredential. */
export class ExecCredentialError extends Error {
  override readonly name = 'ExecCredentialError';
}

/** Refresh this long before the credential's stated expiry, so a request never carries an expired token. */
const EXPIRY_MARGIN_MS = 10_000;
const PLUGIN_TIMEOUT_MS = 60_000;

/** One user's plugin with its cached credential. */
export class ExecCredentialPlugin {
  private cached: { status: ExecCredentialStatus; expiresAt: number } | undefined;
  private running: Promise<ExecCredentialStatus> | undefined;

  constructor(private readonly config: ExecConfig) {}

  /** The cached credential while valid, else a fresh one from the plugin. */
  async credential(): Promise<ExecCredentialStatus> {
    if (this.cached && Date.now() < this.cached.expiresAt) return this.cached.status;
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(): Promise<ExecCredentialStatus> {
    const { command, args, env, apiVersion } = this.config;
    const execInfo = JSON.stringify({ apiVersion, kind: 'ExecCredential', spec: { interactive: false } });
    const childEnv: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: execInfo };
    for (const e of env) childEnv[e.name] = e.value;
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(command, args, { env: childEnv, timeout: PLUGIN_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, out, errOut) => {
        if (err)
          reject(
            new ExecCredentialError(
              `exec plugin ${command} failed: ${err.message}${errOut ? `: ${String(errOut).trim().slice(0, 500)}` : ''}`,
            ),
          );
        else resolve(String(out));
      });
    });
    let status: ExecCredentialStatus;
    try {
      const parsed = JSON.parse(stdout) as { kind?: string; status?: ExecCredentialStatus };
      if (parsed.kind !== 'ExecCredential' || !parsed.status) throw new Error('not an ExecCredential with a status');
      status = parsed.status;
    } catch (err) {
      throw new ExecCredentialError(`exec plugin ${command} printed no ExecCredential: ${(err as Error).message}`);
    }
    if (!status.token && !(status.clientCertificateData && status.clientKeyData)) {
      throw new ExecCredentialError(`exec plugin ${command} returned neither a token nor a client certificate and key`);
    }
    const expiry = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : NaN;
    this.cached = { status, expiresAt: Number.isNaN(expiry) ? Infinity : expiry - EXPIRY_MARGIN_MS };
    return status;
  }
}
