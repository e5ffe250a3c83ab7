// CPU per hostpath provision, this tree against a baseline
// checkout, side by side in one process. Each round provisions `--claims` claims (16 in flight, pattern
// `${.PVC.namespace}/${.PVC.name}`, 8 namespaces, `dev`'s statfs free space) into a fresh base path through one
// tree's HostPathProvisioner, and delivers each new PV through a feed as an informer would (its identity read
// included); rounds alternate the trees (A B, B A, ...) so the machine's drift hits both. CPU is the process's
// (every thread: the libuv pool's filesystem calls too) per provision; the median of the rounds is printed.
// Run: npm run bench:provision -- --baseline DIR
//        [--claims 500] [--rounds 10]
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const get = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
const baseline = get('--baseline');
if (!baseline) throw new Error('--baseline DIR: a checkout of the tree to compare with (node_modules linked)');
const CLAIMS = Number(get('--claims') ?? 500);
const ROUNDS = Number(get('--rounds') ?? 10);
const trees = { baseline: path.resolve(baseline), 'this tree': fileURLToPath(new URL('../', import.meta.url)) };
type Tree = keyof typeof trees;

/* eslint-disable @typescript-eslint/no-explicit-any -- each tree's modules are loaded by path */
async function load(root: string): Promise<Record<string, any>> {
  const from = (p: string) => import(path.join(root, p));
  return {
    ...(await from('src/hostpath/hostpath-provisioner.ts')),
    ...(await from('src/hostpath/config/hostpath-config.ts')),
    ...(await from('src/hostpath/provision/free-space.ts')),
    ...(await from('test/hostpath/cost-fixtures.ts')),
    ...(await from('test/hostpath/provisioner-helpers.ts')),
  };
}

const mods = { baseline: await load(trees.baseline), 'this tree': await load(trees['this tree']) };
const perProvision: Record<Tree, number[]> = { baseline: [], 'this tree': [] };
const tmp = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-provision-cpu-')));
const signal = new AbortController().signal;
const idle = (ms: number) => new Promise((r) => setTimeout(r, ms));
try {
  for (let round = 0; round < ROUNDS; round++) {
    const order: Tree[] = round % 2 ? ['this tree', 'baseline'] : ['baseline', 'this tree'];
    for (const tree of order) {
      const m = mods[tree];
      const root = path.join(tmp, `${round}-${tree.replace(' ', '-')}`);
      for (let ns = 0; ns < 8; ns++) await fsp.mkdir(path.join(root, `ns-${ns}`), { recursive: true });
      const feed = new m.FakeVolumeFeed();
      const sc = m.storageClass('s', { pathPattern: '${.PVC.namespace}/${.PVC.name}' });
      const p = new m.HostPathProvisioner({
        config: m.validateHostPathConfig({ sharedFileSystemPath: root }),
        volumeFeed: feed,
        getVolume: (name: string) => feed.get(name),
        freeSpace: m.filesystemFreeBytes,
      });
      const one = async (i: number) => {
        const c = m.claim({ name: `c${i}`, namespace: `ns-${i % 8}`, size: '1Mi', modes: ['ReadWriteMany'] });
        const { volume } = await p.provision(m.provisionOptions(c, sc), signal);
        volume.spec.claimRef = { namespace: c.metadata.namespace, name: c.metadata.name, uid: c.metadata.uid };
        feed.put({ ...volume, status: { phase: 'Bound' } });
      };
      await one(-1); // loads the base path's records
      await idle(50);
      const before = process.cpuUsage();
      for (let first = 0; first < CLAIMS; first += 16)
        await Promise.all(Array.from({ length: Math.min(16, CLAIMS - first) }, (_, k) => one(first + k)));
      await idle(300); // the identity reads the last PVs' events scheduled (idle time costs no CPU)
      const used = process.cpuUsage(before);
      perProvision[tree].push((used.user + used.system) / 1000 / CLAIMS);
    }
  }
} finally {
  await fsp.rm(tmp, { recursive: true, force: true });
}
/* eslint-enable @typescript-eslint/no-explicit-any */
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const [b, t] = [median(perProvision.baseline), median(perProvision['this tree'])];
console.log(`rounds (CPU ms per provision): ${JSON.stringify(perProvision)}`);
console.log(
  `CPU ms per provision, median of ${ROUNDS} rounds of ${CLAIMS}: baseline ${b.toFixed(2)}, this tree ${t.toFixed(2)}, ratio ${(t / b).toFixed(2)}`,
);
