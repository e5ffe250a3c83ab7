// The selected-node annotation is tenant-writable: the controller checks it before provision() is called. A name
// no Node can have is an infeasible claim (Warning, slow retry, provision() never called); with the node cache, a
// valid name of a Node that does not exist is a Reschedule (selected-node removed). Every event the controller
// emits is bounded to 4 KiB, whatever the backend's error message.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { nodes } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { Node } from '../../src/types/k8s.ts';
import { claim, createClaim, eventsFor, getPVC, storageClass, useController, waitFor } from './harness.ts';

describe('selected node checks and bounded events', () => {
  const f = useController({
    setup: async (backend, env) => {
      const node: Node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } };
      await env.client.create(nodes, node);
      backend.onProvision = (o) => {
        if (o.claim.metadata.name === 'huge-error') throw new InfeasibleError(`bad: ${'x'.repeat(100_000)}`);
        return undefined;
      };
    },
    options: { nodeCache: true, retry: { infeasibleDelayMs: 600_000 } },
    classes: [storageClass('wffc', { volumeBindingMode: 'WaitForFirstConsumer' }), storageClass('std')],
  });
  const failed = (name: string) => eventsFor(f.env, name).filter((e) => e.reason === 'ProvisioningFailed');

  it('a selected node that is not a valid node name: infeasible Warning, provision() never called', async () => {
    const c = await createClaim(
      f.env,
      claim('bad-node', 'wffc', { annotations: { [ANN_SELECTED_NODE]: '../../etc' } }),
    );
    const ev = await waitFor('ProvisioningFailed', () => failed('bad-node')[0]);
    assert.equal(ev.type, 'Warning');
    assert.match(ev.message ?? '', /infeasible error.*selected node "\.\.\/\.\.\/etc" is not a valid node name/);
    assert.equal(f.backend.provisionCalls.includes(`pvc-${c.metadata.uid}`), false);
    assert.equal(
      getPVC(f.env, 'default', 'bad-node')?.metadata.annotations?.[ANN_SELECTED_NODE],
      '../../etc',
      'not rescheduled: no node can have that name',
    );
  });

  it('a selected node missing from the node cache: Reschedule (selected-node removed), provision() never called', async () => {
    const c = await createClaim(f.env, claim('gone-node', 'wffc', { annotations: { [ANN_SELECTED_NODE]: 'node-2' } }));
    await waitFor(
      'selected-node removed',
      () => getPVC(f.env, 'default', 'gone-node')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
    );
    assert.match(failed('gone-node')[0]?.message ?? '', /selected node node-2 does not exist/);
    assert.equal(f.backend.provisionCalls.includes(`pvc-${c.metadata.uid}`), false);
  });

  it('an existing selected node is provisioned as usual', async () => {
    const c = await createClaim(f.env, claim('good-node', 'wffc', { annotations: { [ANN_SELECTED_NODE]: 'node-1' } }));
    await waitFor('provisioned', () => f.backend.volumes.has(`pvc-${c.metadata.uid}`));
  });

  it('a 100 KB error message becomes an event of at most 4 KiB', async () => {
    await createClaim(f.env, claim('huge-error', 'std'));
    const ev = await waitFor('ProvisioningFailed', () => failed('huge-error')[0]);
    assert.ok(Buffer.byteLength(ev.message ?? '') <= 4096, `${Buffer.byteLength(ev.message ?? '')} bytes`);
    assert.match(
      ev.message ?? '',
      /^Volume provisioning failed with infeasible error\. Retries will be delayed\. bad: x+…\(\d+ bytes, shortened\)…x+$/,
    );
  });
});
