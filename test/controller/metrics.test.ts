// Controller metrics: the Go library's names, registered once per registry.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createControllerMetrics, METRIC_NAMES } from '../../src/controller/controller-metrics.ts';
import {
  claim,
  createClaim,
  createClass,
  eventsFor,
  getPV,
  PROVISIONER,
  storageClass,
  useController,
  waitFor,
} from './harness.ts';

describe('metrics', () => {
  it('registers the Go names once; a second controller on the same registry reuses them', async () => {
    const registry = new Registry();
    const a = createControllerMetrics(registry);
    const b = createControllerMetrics(registry);
    a.provisionTotal.inc({ class: 'c', source: '' });
    b.provisionTotal.inc({ class: 'c', source: '' });
    const text = await registry.metrics();
    assert.match(text, /controller_persistentvolumeclaim_provision_total\{class="c",source=""\} 2/);
    for (const name of Object.values(METRIC_NAMES)) assert.ok(registry.getSingleMetric(name), name);
  });
});

// docs/metrics.md: a claim waiting for its missing StorageClass gets the Go library's ProvisioningFailed event but is
// not a provisioning attempt, so it is not counted in provision_failed_total (the Go library counts every backoff
// retry of it). Once the class exists, the claim is provisioned and counted as a success.
describe('metrics: a claim waiting for its missing StorageClass', () => {
  const f = useController();

  it('gets the ProvisioningFailed event, is not counted as failed, and counts once provisioned', async () => {
    const c = await createClaim(
      f.env,
      claim('orphan', 'later', { annotations: { 'volume.kubernetes.io/storage-provisioner': PROVISIONER } }),
    );
    await waitFor('the missing-class event', () =>
      eventsFor(f.env, 'orphan').find(
        (e) => e.reason === 'ProvisioningFailed' && /"later" not found/.test(e.message ?? ''),
      ),
    );
    const failed = async () =>
      (
        await f.registry.getSingleMetric('controller_persistentvolumeclaim_provision_failed_total')?.get()
      )?.values.reduce((n, v) => n + v.value, 0) ?? 0;
    assert.equal(await failed(), 0);
    await createClass(f.env, storageClass('later'));
    await waitFor('the PV saved', () => getPV(f.env, `pvc-${c.metadata.uid}`));
    assert.equal(await failed(), 0);
    await waitFor('counted as provisioned', async () =>
      (await f.registry.metrics()).includes(
        'controller_persistentvolumeclaim_provision_total{class="later",source=""} 1',
      ),
    );
  });
});
