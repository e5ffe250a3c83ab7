// The focused kubeconfig loader (RestConfig) against @kubernetes/client-node's KubeConfig: the same kubeconfigs
// loaded through both must give the same server, CA, client certificate, TLS switches and Authorization header.
// Also: token and certificate file reload, exec plugin caching, and the refusals (auth-provider, proxy-url) by name.
import assert from 'node:assert/strict';
import type https from 'node:https';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { KubeConfigError, RestConfig } from '../../src/runtime/rest-config.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n';

function config(cluster: string, user: string, extra = ''): string {
  return `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n${cluster}\nusers:\n- name: u\n  user:\n${user}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: ns1\n${extra}current-context: x\n`;
}

interface Seen {
  server?: string;
  authorization?: unknown;
  impersonate?: unknown;
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
  auth?: string;
}

async function seen(kc: {
  getCurrentCluster(): { server: string } | null;
  applyToHTTPSOptions(o: https.RequestOptions): Promise<void>;
}): Promise<Seen> {
  const o: https.RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(o);
  const h = o.headers as Record<string, unknown>;
  const s = (v: unknown) => (v === undefined ? undefined : String(v));
  return {
    server: kc.getCurrentCluster()?.server,
    authorization: h.Authorization,
    impersonate: h['Impersonate-User'],
    ca: s(o.ca),
    cert: s(o.cert),
    key: s(o.key),
    rejectUnauthorized: o.rejectUnauthorized,
    servername: o.servername ?? undefined,
    auth: o.auth ?? undefined,
  };
}

describe('RestConfig gives what client-node gives', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeconfig-compare-'));
    await writeFile(join(dir, 'ca.crt'), CA);
    await writeFile(join(dir, 'client.crt'), CERT);
    await writeFile(join(dir, 'client.key'), KEY);
    await writeFile(join(dir, 'token'), 'file-token');
    await writeFile(join(dir, 'token-nl'), 'file-token\n');
    await writeFile(
      join(dir, 'plugin.mjs'),
      `// client-node sets no KUBERNETES_EXEC_INFO; kubectl and RestConfig do.
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO ?? '{"apiVersion":"client.authentication.k8s.io/v1"}');
if (process.argv[2] === 'cert') console.log(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { clientCertificateData: ${JSON.stringify(CERT)}, clientKeyData: ${JSON.stringify(KEY)} } }));
else console.log(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { token: 'exec-' + process.env.PLUGIN_SUFFIX } }));
`,
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const exec = (arg: string) =>
    `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ${process.execPath}\n      args: [${JSON.stringify(join(dir, 'plugin.mjs'))}, ${arg}]\n      env:\n      - name: PLUGIN_SUFFIX\n        value: abc\n      interactiveMode: Never`;
  const cases: Record<string, () => string> = {
    'token, CA data, tls-server-name': () =>
      config(
        `    server: https://a.example:6443/\n    certificate-authority-data: ${b64(CA)}\n    tls-server-name: api.internal`,
        '    token: t0k3n',
      ),
    'CA file and client certificate files, relative paths': () =>
      config(
        '    server: https://b.example\n    certificate-authority: ca.crt',
        '    client-certificate: client.crt\n    client-key: ./client.key',
      ),
    'client certificate data, insecure-skip-tls-verify': () =>
      config(
        '    server: https://c.example\n    insecure-skip-tls-verify: true',
        `    client-certificate-data: ${b64(CERT)}\n    client-key-data: ${b64(KEY)}`,
      ),
    // client-node reads `token-file`; kubectl's field is `tokenFile` (checked below). RestConfig reads both.
    'token file': () =>
      config(
        `    server: https://d.example\n    certificate-authority: ${join(dir, 'ca.crt')}`,
        `    token-file: ${join(dir, 'token')}`,
      ),
    'basic auth and impersonation': () =>
      config('    server: https://e.example', '    username: admin\n    password: secret\n    as: someone'),
    'exec plugin, token': () => config('    server: https://f.example', exec('token')),
    'exec plugin, client certificate': () => config('    server: https://g.example', exec('cert')),
  };
  for (const [name, text] of Object.entries(cases)) {
    test(name, async () => {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
      await writeFile(file, text());
      const theirs = new KubeConfig();
      theirs.loadFromFile(file);
      const ours = loadKubeConfig({ path: file }).kubeConfig;
      const expected = await seen(theirs);
      assert.ok(expected.server, 'client-node accepted it');
      assert.deepEqual(await seen(ours), expected);
    });
  }

  test("kubectl's tokenFile field (trimmed, as client-go does)", async () => {
    const file = join(dir, 'tokenFile.yaml');
    await writeFile(file, config('    server: https://d.example', `    tokenFile: ${join(dir, 'token-nl')}`));
    assert.equal((await seen(loadKubeConfig({ path: file }).kubeConfig)).authorization, 'Bearer file-token');
  });

  test('KUBECONFIG with several files merges them, the first current-context winning', async () => {
    const a = join(dir, 'merge-a.yaml');
    const b = join(dir, 'merge-b.yaml');
    await writeFile(
      a,
      'apiVersion: v1\nkind: Config\nclusters:\n- name: ca\n  cluster:\n    server: https://merged.example\ncurrent-context: ctx\n',
    );
    await writeFile(
      b,
      'apiVersion: v1\nkind: Config\nusers:\n- name: ub\n  user:\n    token: merged\ncontexts:\n- name: ctx\n  context:\n    cluster: ca\n    user: ub\ncurrent-context: other\n',
    );
    const theirs = new KubeConfig();
    theirs.loadFromFile(a);
    const next = new KubeConfig();
    next.loadFromFile(b);
    theirs.mergeConfig(next, true);
    const ours = loadKubeConfig({ env: { KUBECONFIG: [a, b].join(delimiter) } }).kubeConfig;
    assert.deepEqual(await seen(ours), await seen(theirs));
    assert.equal(ours.getCurrentContextObject()?.name, 'ctx');
  });

  test('context selection', async () => {
    const file = join(dir, 'contexts.yaml');
    await writeFile(
      file,
      config(
        '    server: https://one.example',
        '    token: one',
        '- name: y\n  context:\n    cluster: c2\n    user: u\nclusters2: []\n',
      )
        .replace('users:', 'users:')
        .replace('clusters:\n', 'clusters:\n- name: c2\n  cluster:\n    server: https://two.example\n'),
    );
    const theirs = new KubeConfig();
    theirs.loadFromFile(file);
    theirs.setCurrentContext('y');
    const ours = loadKubeConfig({ path: file, context: 'y' }).kubeConfig;
    assert.deepEqual(await seen(ours), await seen(theirs));
    assert.equal((await seen(ours)).server, 'https://two.example');
    assert.throws(() => loadKubeConfig({ path: file, context: 'nope' }), KubeConfigError);
  });

  test('in-cluster: the same server, CA and token; the token file is re-read after a minute', async () => {
    const prefix = join(dir, 'pod');
    const sa = join(prefix, 'var/run/secrets/kubernetes.io/serviceaccount');
    await import('node:fs/promises').then((fs) => fs.mkdir(sa, { recursive: true }));
    await writeFile(join(sa, 'token'), 'sa-token-1');
    await writeFile(join(sa, 'ca.crt'), CA);
    await writeFile(join(sa, 'namespace'), 'kube-system');
    const env = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const theirs = new KubeConfig();
      theirs.loadFromCluster(prefix);
      const ours = loadKubeConfig({ inCluster: true, env, inClusterPathPrefix: prefix }).kubeConfig;
      assert.deepEqual(await seen(ours), await seen(theirs));
      assert.equal(ours.getCurrentContextObject()?.namespace, 'kube-system');
    } finally {
      for (const k of Object.keys(env)) if (!(k in saved)) delete process.env[k];
    }
    let now = 0;
    const rotating = new RestConfig(() => now);
    rotating.addInCluster(env, sa);
    assert.equal((await seen(rotating)).authorization, 'Bearer sa-token-1');
    await writeFile(join(sa, 'token'), 'sa-token-2');
    const CA2 = CA.replace('CA', 'CA2');
    await writeFile(join(sa, 'ca.crt'), CA2);
    now = 59_000;
    assert.equal((await seen(rotating)).authorization, 'Bearer sa-token-1', 'cached within the minute');
    assert.equal((await seen(rotating)).ca, CA, 'the CA file is not re-read on every request');
    now = 61_000;
    assert.equal((await seen(rotating)).authorization, 'Bearer sa-token-2', 'rotated token picked up');
    assert.equal((await seen(rotating)).ca, CA2, 'rotated CA picked up');
  });

  test('exec plugin output is cached until it expires; a failing plugin is a clear error', async () => {
    const counter = join(dir, 'count');
    const script = join(dir, 'counting.mjs');
    await writeFile(
      script,
      `import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(counter)}, 'x');
console.log(JSON.stringify({ kind: 'ExecCredential', status: { token: 'counted' } }));`,
    );
    const file = join(dir, 'counting.yaml');
    await writeFile(
      file,
      config(
        '    server: https://h.example',
        `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ${process.execPath}\n      args: [${JSON.stringify(script)}]`,
      ),
    );
    const kc = loadKubeConfig({ path: file }).kubeConfig;
    await Promise.all([seen(kc), seen(kc), seen(kc)]);
    await seen(kc);
    const { readFile } = await import('node:fs/promises');
    assert.equal(await readFile(counter, 'utf8'), 'x', 'one run for concurrent and later calls');
    const broken = join(dir, 'broken.yaml');
    await writeFile(
      broken,
      config(
        '    server: https://i.example',
        `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ${join(dir, 'no-such-plugin')}`,
      ),
    );
    await assert.rejects(seen(loadKubeConfig({ path: broken }).kubeConfig), /exec plugin .*no-such-plugin failed/);
  });

  test('unsupported features are refused by name; a missing kubeconfig has one message however it was named', async () => {
    const ap = join(dir, 'auth-provider.yaml');
    await writeFile(ap, config('    server: https://j.example', '    auth-provider:\n      name: oidc'));
    assert.throws(() => loadKubeConfig({ path: ap }), /auth-provider is not supported/);
    const px = join(dir, 'proxy.yaml');
    await writeFile(px, config('    server: https://k.example\n    proxy-url: http://proxy:3128', '    token: t'));
    assert.throws(() => loadKubeConfig({ path: px }), /proxy-url is not supported/);
    const missing = join(dir, 'missing.yaml');
    const byPath = captureError(() => loadKubeConfig({ path: missing }));
    const byEnv = captureError(() => loadKubeConfig({ env: { KUBECONFIG: missing } }));
    assert.ok(byPath instanceof KubeConfigError && byEnv instanceof KubeConfigError);
    assert.equal(byPath.message, `kubeconfig ${missing} does not exist`);
    assert.equal(byEnv.message, byPath.message);
    await chmod(dir, 0o700);
  });
});

function captureError(fn: () => unknown): Error | undefined {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  return undefined;
}
