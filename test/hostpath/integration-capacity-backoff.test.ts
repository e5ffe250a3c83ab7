// Regression: a WaitForFirstConsumer claim larger than what is left on every node used to hot-loop (Reschedule,
// the scheduler stand-in selects the same node again, Reschedule...: hundreds of events a minute). Now, once no
// node can have room, the claim backs off like an infeasible one: one Warning per backoff step, aggregated on one
// Event by the correlator (its count grows), and provision() is called once per step. Counted over a bounded
// number of steps (the Event's count), never over wall time.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_NODE, validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  createPod,
  startHostPathEnv,
  startInstance,
  storageClass,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

const PROVISIONER = 'backoff.kube-provisioner.io/local';
const STEPS = 4;

describe('hostpath: no hot loop when no node has room', () => {
  let env: HostPathEnv;
  let instance: Instance;

  before(async () => {
    env = await startHostPathEnv('kp-int-backoff-');
    const nodes = path.join(env.tmp, 'nodes');
    await fsp.mkdir(nodes);
    // The dev setup: every node (this one included) gets the default paths, so the provisioner cannot list the
    // other nodes and must learn from the scheduler picking this node again.
    const config = validateHostPathConfig({
      storageClassConfigs: {
        full: { nodePathMap: [{ node: DEFAULT_NODE, paths: [{ path: nodes, capacity: '10Mi' }] }] },
      },
    });
    // A short slow retry so that several backoff steps happen within the test.
    instance = startInstance(env, {
      provisionerName: PROVISIONER,
      config,
      mode: 'deployment',
      nodeName: env.localNode,
      controller: { retry: { infeasibleDelayMs: 300 } },
    });
    await createClass(env, storageClass('full', PROVISIONER, { volumeBindingMode: 'WaitForFirstConsumer' }));
  });

  after(async () => {
    await instance?.stop();
    await env?.stop();
  });

  it(`${STEPS} backoff steps: one aggregated infeasible Warning, one provision() per step, selected node kept`, async () => {
    await createClaim(env, claim('fits', 'full', { size: '6Mi' }));
    await createPod(env, 'fits', ['fits']);
    await boundVolume(env, 'fits');
    await createClaim(env, claim('too-big', 'full', { size: '6Mi' }));
    await createPod(env, 'too-big', ['too-big']);

    const failed = () => env.events('too-big', PROVISIONER).filter((e) => e.reason === 'ProvisioningFailed');
    const infeasible = () => failed().find((e) => /infeasible error/.test(e.message ?? ''));
    const ev = await waitFor(
      `${STEPS} infeasible attempts`,
      () => (infeasible()?.count ?? 0) >= STEPS && infeasible(),
      30_000,
    );
    assert.equal(ev.type, 'Warning');
    assert.match(ev.message ?? '', /Retries will be delayed/);
    assert.match(ev.message ?? '', /no node has 6Mi free/);
    // The first refusal asked the scheduler for another node; after that only the one aggregated infeasible Event.
    const events = failed();
    assert.ok(
      events.length <= 2,
      `ProvisioningFailed events: ${events.map((e) => `${e.count}x ${e.message}`).join(' | ')}`,
    );
    const steps = ev.count ?? 0;
    const calls = instance.calls.filter((c) => c.name.length > 0 && c.outcome !== 'ok').length;
    // One call per backoff step (+ the rescheduled one, + one that may be running right now).
    assert.ok(calls <= steps + 2, `provision() failed ${calls} times for ${steps} backoff steps`);
    assert.equal(
      env.claim('too-big')?.metadata.annotations?.[ANN_SELECTED_NODE],
      env.localNode,
      'the claim stays on its node while it backs off',
    );
    assert.notEqual(env.claim('too-big')?.status?.phase, 'Bound');
  });
});
