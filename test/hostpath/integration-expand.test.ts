// Integration: hostpath expansion through startHostPathService (the `run hostpath` wiring) against the embedded
// cluster, on real temp directories with a watched configuration file. A claim grows within its base path's
// budget (ledger and on-disk record carry the new size); a growth the budget cannot hold is infeasible until a
// configuration reload raises the budget; a crash between expand() and the PV write is recovered by a new
// instance without counting the growth twice; a Released (retained) volume is refused.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { startHostPathService, type HostPathService } from '../../src/cli/hostpath-service.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { readVolumeRecords } from '../../src/hostpath/records/volume-records.ts';
import { silentLogger } from '../../src/types/logger.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  FAST_CONTROLLER,
  NS,
  startHostPathEnv,
  storageClass,
  waitFor,
  type HostPathEnv,
} from './integration-helpers.ts';

const PROVISIONER = 'expand.kube-provisioner.io/hostpath';
const MI = 1024n * 1024n;

describe('hostpath integration: expansion', () => {
  let env: HostPathEnv;
  let base: string;
  let configFile: string;
  let service: HostPathService;
  let stop: AbortController;

  async function writeConfig(capacity: string): Promise<void> {
    const tmp = `${configFile}.tmp`;
    await fsp.writeFile(
      tmp,
      JSON.stringify({ storageClassConfigs: { grow: { sharedFileSystemPath: { path: base, capacity } } } }),
    );
    await fsp.rename(tmp, configFile);
  }
  async function startService(): Promise<void> {
    stop = new AbortController();
    service = await startHostPathService(
      {
        client: env.client,
        provisionerName: PROVISIONER,
        mode: 'deployment',
        nodeName: env.localNode,
        config: { file: configFile },
        // The infeasible slow retry is short here: the budget is raised by a reload, not by a change to the claim.
        controller: { ...FAST_CONTROLLER, retry: { ...FAST_CONTROLLER.retry, infeasibleDelayMs: 300 } },
        logger: silentLogger,
        volumeUsageIntervalMs: 0,
      },
      stop.signal,
    );
  }
  async function stopService(): Promise<void> {
    stop.abort();
    await service.done;
  }
  const request = (name: string, size: string) =>
    env.client.patch(
      persistentVolumeClaims,
      name,
      { spec: { resources: { requests: { storage: size } } } },
      { namespace: NS, type: 'merge' },
    );
  const recordedBytes = async () => (await readVolumeRecords(base)).reduce((sum, r) => sum + BigInt(r.bytes), 0n);
  const allocated = () => service.provisioner.allocations().find((a) => a.basePath === base)?.allocated;

  before(async () => {
    env = await startHostPathEnv('kp-int-expand-');
    base = path.join(env.tmp, 'shared');
    await fsp.mkdir(base);
    configFile = path.join(env.tmp, 'config', 'config.json');
    await fsp.mkdir(path.dirname(configFile));
    await writeConfig('10Mi');
    await startService();
    await createClass(env, storageClass('grow', PROVISIONER, { allowVolumeExpansion: true }));
  });
  after(async () => {
    await stopService();
    await env?.stop();
  });

  it('grows a claim within the budget: PV, claim, ledger and record carry the new size', async () => {
    await createClaim(env, claim('first', 'grow', { size: '2Mi' }));
    const pv = await boundVolume(env, 'first');
    await request('first', '4Mi');
    await waitFor('first at 4Mi', () => env.claim('first')?.status?.capacity?.storage === '4Mi');
    assert.equal(env.volume(pv.metadata.name ?? '')?.spec.capacity?.storage, '4Mi');
    assert.equal(allocated(), 4n * MI);
    assert.equal(await recordedBytes(), 4n * MI);
    assert.ok(env.events('first').some((e) => e.reason === 'VolumeResizeSuccessful'));
  });

  it('infeasible while the budget is full; a configuration reload raising it lets the resize complete', async () => {
    await createClaim(env, claim('second', 'grow', { size: '2Mi' }));
    await boundVolume(env, 'second');
    await request('second', '8Mi');
    await waitFor(
      'infeasible',
      () => env.claim('second')?.status?.allocatedResourceStatuses?.storage === 'ControllerResizeInfeasible',
    );
    const failed = await waitFor('VolumeResizeFailed', () =>
      env.events('second').find((e) => e.reason === 'VolumeResizeFailed'),
    );
    assert.match(failed.message ?? '', /cannot hold 8Mi/);
    assert.equal(env.claim('second')?.status?.capacity?.storage, '2Mi');
    assert.equal(allocated(), 6n * MI, 'a refused growth allocates nothing');
    await writeConfig('20Mi');
    await waitFor('second at 8Mi', () => env.claim('second')?.status?.capacity?.storage === '8Mi');
    assert.equal(env.claim('second')?.status?.allocatedResourceStatuses?.storage, undefined);
    assert.equal(allocated(), 12n * MI);
    assert.equal(await recordedBytes(), 12n * MI);
  });

  it('a crash between expand() and the PV write: the next instance finishes without double accounting', async () => {
    await createClaim(env, claim('third', 'grow', { size: '2Mi' }));
    const pv = await boundVolume(env, 'third');
    const pvName = pv.metadata.name ?? '';
    const rule = env.cluster.faults.add({ verb: 'patch', resource: 'persistentvolumes', name: pvName, status: 500 });
    await request('third', '3Mi');
    // expand() ran (the record says 3Mi), the PV write keeps failing; then the process goes away.
    await waitFor(
      'record at 3Mi',
      async () => (await readVolumeRecords(base)).find((r) => r.pvName === pvName)?.bytes === String(3n * MI),
    );
    await stopService();
    env.cluster.faults.remove(rule);
    assert.equal(env.volume(pvName)?.spec.capacity?.storage, '2Mi');
    await startService();
    await waitFor('third at 3Mi', () => env.claim('third')?.status?.capacity?.storage === '3Mi');
    assert.equal(env.volume(pvName)?.spec.capacity?.storage, '3Mi');
    assert.equal(allocated(), 15n * MI, '4Mi + 8Mi + 3Mi, the growth counted once');
    assert.equal(await recordedBytes(), 15n * MI);
  });

  it('refuses to expand a Released (retained) volume', async () => {
    const pv = env.volume(env.claim('first')?.spec.volumeName ?? '');
    assert.ok(pv);
    const released = { ...pv, status: { phase: 'Released' as const } };
    await assert.rejects(service.provisioner.expand(released, '5Mi', new AbortController().signal), InfeasibleError);
    assert.equal(allocated(), 15n * MI);
  });
});
