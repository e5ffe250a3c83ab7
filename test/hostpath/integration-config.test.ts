// Integration: configuration reload through startHostPathService with a watched file, against the embedded
// cluster on real temp directories. Editing the file makes a new base path usable without a restart; an invalid
// edit keeps the last good configuration in force and is reported as a Warning event (on this instance's Node).
// A claim refused before the edit (its class was not configured) is re-checked as soon as the edit applies.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { startHostPathService, type HostPathService } from '../../src/cli/hostpath-service.ts';
import { silentLogger } from '../../src/types/logger.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  entriesBelow,
  FAST_CONTROLLER,
  startHostPathEnv,
  storageClass,
  volumePath,
  waitFor,
  type HostPathEnv,
} from './integration-helpers.ts';

const PROVISIONER = 'reload.kube-provisioner.io/hostpath';

describe('hostpath integration: configuration reload from a file', () => {
  let env: HostPathEnv;
  let first: string;
  let second: string;
  let configFile: string;
  let service: HostPathService;
  const stop = new AbortController();

  const configEvents = (reason: string) =>
    env
      .events(env.localNode, `${PROVISIONER}/config`)
      .filter((e) => e.reason === reason && e.involvedObject.kind === 'Node');
  // Written next to the file and renamed over it, the way a ConfigMap volume swaps its content.
  async function writeConfig(value: unknown): Promise<void> {
    const tmp = `${configFile}.tmp`;
    await fsp.writeFile(tmp, typeof value === 'string' ? value : JSON.stringify(value));
    await fsp.rename(tmp, configFile);
  }

  before(async () => {
    env = await startHostPathEnv('kp-int-config-');
    first = path.join(env.tmp, 'first');
    second = path.join(env.tmp, 'second');
    await fsp.mkdir(first);
    await fsp.mkdir(second);
    configFile = path.join(env.tmp, 'config', 'config.json');
    await fsp.mkdir(path.dirname(configFile));
    await writeConfig({ storageClassConfigs: { one: { sharedFileSystemPath: first } } });
    service = await startHostPathService(
      {
        client: env.client,
        provisionerName: PROVISIONER,
        mode: 'deployment',
        nodeName: env.localNode,
        config: { file: configFile },
        controller: FAST_CONTROLLER,
        logger: silentLogger,
      },
      stop.signal,
    );
    await createClass(env, storageClass('one', PROVISIONER));
    await createClass(env, storageClass('two', PROVISIONER));
  });

  after(async () => {
    stop.abort();
    await service?.done;
    await env?.stop();
  });

  it('serves the initial configuration; a class it does not list is refused', async () => {
    const pv = await boundVolume(env, (await createClaim(env, claim('in-first', 'one'))).metadata.name ?? '');
    assert.equal(path.dirname(volumePath(pv)), first);
    await createClaim(env, claim('too-early', 'two'));
    const ev = await waitFor('refused', () =>
      env.events('too-early', PROVISIONER).find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.match(ev.message ?? '', /storage class two is not listed in the hostpath configuration/);
  });

  it('an edit adding a new base path applies without a restart, and the refused claim is re-checked at once', async () => {
    await writeConfig({
      storageClassConfigs: { one: { sharedFileSystemPath: first }, two: { sharedFileSystemPath: second } },
    });
    await waitFor('ConfigurationReloaded event', () => configEvents('ConfigurationReloaded')[0]);
    const pv = await boundVolume(env, (await createClaim(env, claim('in-second', 'two'))).metadata.name ?? '');
    assert.equal(path.dirname(volumePath(pv)), second);
    // Its infeasible slow retry is 10 minutes here: only the re-check after the reload binds it this soon.
    const early = await boundVolume(env, 'too-early');
    assert.equal(path.dirname(volumePath(early)), second);
  });

  it('an invalid edit keeps the last good configuration and emits a Warning event', async () => {
    const notADirectory = path.join(env.tmp, 'a-file');
    await fsp.writeFile(notADirectory, 'not a directory');
    await writeConfig({
      storageClassConfigs: { one: { sharedFileSystemPath: first }, two: { sharedFileSystemPath: notADirectory } },
    });
    const ev = await waitFor('InvalidConfiguration event', () => configEvents('InvalidConfiguration')[0]);
    assert.equal(ev.type, 'Warning');
    assert.match(ev.message ?? '', /keeping the last good configuration/);
    assert.ok((ev.message ?? '').includes(`${notADirectory}: is not a directory`), ev.message);
    // Still the previous configuration: class two provisions into `second`.
    const pv = await boundVolume(env, (await createClaim(env, claim('after-invalid', 'two'))).metadata.name ?? '');
    assert.equal(path.dirname(volumePath(pv)), second);
    assert.equal(await fsp.readFile(notADirectory, 'utf8'), 'not a directory');

    await writeConfig('{ "storageClassConfigs": ');
    await waitFor(
      'a second InvalidConfiguration event (unparsable file)',
      () => configEvents('InvalidConfiguration').length >= 2,
    );
    const pv2 = await boundVolume(env, (await createClaim(env, claim('after-garbage', 'one'))).metadata.name ?? '');
    assert.equal(path.dirname(volumePath(pv2)), first);
    assert.deepEqual((await entriesBelow(second)).length, 3, 'exactly the three volumes of class two');
  });
});
