// The usage refresh of a hostpath provisioner on real directories: one walk budget (entries per second) paces all
// volumes and what it cannot walk before the refresh's deadline is reported as a lower bound (filesystem calls
// counted through the injected fs, time from a TestClock: no wall time); inodes are counted; crossing a volume's
// capacity gives exactly one Warning per crossing; the usage is published only when it changed enough.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Registry } from 'prom-client';
import { createHostPathMetrics } from '../../src/hostpath/hostpath-metrics.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { nodeUsageFs, type UsageFs } from '../../src/hostpath/usage/directory-usage.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { silentLogger } from '../../src/types/logger.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../../src/types/annotations.ts';
import type { KubeObject, PersistentVolume } from '../../src/types/k8s.ts';
import type { VolumeUsageSummary } from '../../src/types/volume-usage.ts';
import { explainDecision } from '../../src/controller/claim/explain-claim.ts';
import { ANN_VOLUME_USAGE, formatVolumeUsage } from '../../src/types/volume-usage.ts';
import { claim, provisionOptions, storageClass, tempTree } from './provisioner-helpers.ts';

const NAME = 'usage.kube-provisioner.io/hostpath';

describe('hostpath volume usage', () => {
  let tmp: string;
  let provisioner: HostPathProvisioner;

  before(async () => {
    tmp = await fsp.realpath(await tempTree('kp-usage-'));
    provisioner = new HostPathProvisioner({
      config: validateHostPathConfig({ sharedFileSystemPath: tmp }),
      logger: silentLogger,
    });
  });
  after(async () => {
    await fsp.rm(tmp, { recursive: true, force: true });
  });

  async function volume(name: string, size: string, files: number): Promise<PersistentVolume> {
    const c = claim({ name, size, modes: ['ReadWriteMany'] });
    const { volume: pv } = await provisioner.provision(
      provisionOptions(c, storageClass('shared')),
      new AbortController().signal,
    );
    pv.metadata.annotations = { ...pv.metadata.annotations, [ANN_DYNAMICALLY_PROVISIONED]: NAME };
    pv.spec.claimRef = { namespace: c.metadata.namespace, name: c.metadata.name, uid: c.metadata.uid };
    const dir = pv.spec.hostPath?.path ?? pv.spec.local?.path ?? '';
    for (let i = 0; i < files; i++) await fsp.writeFile(path.join(dir, `f${i}`), 'x');
    return pv;
  }

  it('one entries-per-second budget for all volumes; what it cannot walk in the interval is a lower bound', async () => {
    const small = await volume('small', '1Mi', 20);
    const big = await volume('big', '1Mi', 300);
    const late = await volume('late', '1Mi', 5);
    const calls = { lstat: 0, readdir: 0 };
    const counting: UsageFs = {
      lstat: (p) => (calls.lstat++, nodeUsageFs.lstat(p)),
      readdir: (p) => (calls.readdir++, nodeUsageFs.readdir(p)),
    };
    const clock = new TestClock();
    const registry = new Registry();
    const metrics = createHostPathMetrics({
      registry,
      provisioner,
      provisionerName: NAME,
      mode: 'deployment',
      listVolumes: async () => [small, big, late],
      usageIntervalMs: 1_000,
      walkEntriesPerSecond: 100,
      usageFs: counting,
      clock,
      logger: silentLogger,
    });
    let done = false;
    const refresh = metrics.refreshUsage(new AbortController().signal).finally(() => (done = true));
    // Virtual time moves only while the walk waits for the budget.
    while (!done) {
      if (clock.pending > 0) await clock.advance(5);
      else await new Promise((r) => setImmediate(r));
    }
    await refresh;
    // 100 entries of burst, then 100 per second until the 1 s deadline.
    assert.ok(calls.lstat <= 201, `lstat calls ${calls.lstat}`);
    assert.ok(calls.lstat >= 195, `the budget was used: ${calls.lstat}`);
    const gauge = async (metric: string) =>
      Object.fromEntries(
        (await registry.getSingleMetric(metric)!.get()).values.map((v) => [v.labels.persistentvolumeclaim, v.value]),
      );
    assert.deepEqual(await gauge('hostpath_volume_usage_complete'), { small: 1, big: 0, late: 0 });
    const inodes = await gauge('hostpath_volume_used_inodes');
    assert.equal(inodes.small, 21, 'the directory and its 20 files');
    assert.ok(inodes.big > 0 && inodes.big < 301, `a lower bound: ${inodes.big}`);
  });

  it('crossing the capacity gives exactly one Warning per crossing; usage published only when it moved', async () => {
    const pv = await volume('grows', '1Mi', 0);
    const dir = pv.spec.hostPath?.path ?? pv.spec.local?.path ?? '';
    const events: Array<{ obj: KubeObject; reason: string; message: string }> = [];
    const published: VolumeUsageSummary[] = [];
    const metrics = createHostPathMetrics({
      registry: new Registry(),
      provisioner,
      provisionerName: NAME,
      mode: 'deployment',
      listVolumes: async () => [pv],
      usageIntervalMs: 0,
      logger: silentLogger,
      events: { event: (obj, _type, reason, message) => events.push({ obj, reason, message }) },
      publishUsage: async (_pv, value) => void published.push(value),
    });
    const refresh = () => metrics.refreshUsage(new AbortController().signal);
    await refresh();
    assert.equal(events.length, 0);
    assert.equal(published.length, 1, 'the first measurement is published');
    await fsp.writeFile(path.join(dir, 'big'), Buffer.alloc(2 * 1024 * 1024, 1));
    await refresh();
    await refresh();
    await refresh();
    assert.deepEqual(
      events.map((e) => e.reason),
      ['VolumeUsageOverCapacity'],
    );
    assert.equal(events[0].obj.metadata.name, 'grows');
    assert.equal(events[0].obj.kind, 'PersistentVolumeClaim');
    assert.match(events[0].message, /more than its capacity 1Mi/);
    assert.equal(published.length, 2, 'published again once, when the usage moved');
    await fsp.rm(path.join(dir, 'big'));
    await refresh();
    assert.equal(events.length, 1);
    await fsp.writeFile(path.join(dir, 'again'), Buffer.alloc(2 * 1024 * 1024, 1));
    await refresh();
    assert.equal(events.length, 2, 'a new crossing after coming back under');
    // explain shows what was published on the PV.
    const last = published[published.length - 1];
    const bound = {
      ...pv,
      metadata: {
        ...pv.metadata,
        annotations: { ...pv.metadata.annotations, [ANN_VOLUME_USAGE]: formatVolumeUsage(last) },
      },
    };
    const c = {
      ...claim({ name: 'grows' }),
      spec: { volumeName: pv.metadata.name, resources: { requests: { storage: '1Mi' } } },
      status: { phase: 'Bound' as const },
    };
    const e = explainDecision({
      claim: c,
      provisionerName: NAME,
      volume: bound,
      decision: { action: 'ignore', code: 'AlreadyBound', reason: 'bound' },
    });
    assert.ok(
      e.facts.some((f) => /^usage: \S+ of 1Mi, \d+ inodes \(measured 20\d\d-/.test(f)),
      e.facts.join('\n'),
    );
  });
});
