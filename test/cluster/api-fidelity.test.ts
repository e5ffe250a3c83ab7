// Fidelity details found by probing the server against kube-apiserver's behaviour: canonical quantity
// serialization (Go re-encodes every resource.Quantity) on the wire and in the pure formatter.
import { after, before, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { canonicalQuantity } from '../../src/cluster/registry/quantity-canonical.ts';
import { pvBody, pvcBody, raw } from './api-harness.ts';

test('canonicalQuantity matches resource.Quantity.String()', () => {
  const cases: Array<[string, string]> = [
    ['1Gi', '1Gi'],
    ['1024Mi', '1Gi'],
    ['0.5Gi', '512Mi'],
    ['1.5Gi', '1536Mi'],
    ['100Mi', '100Mi'],
    ['1Ki', '1Ki'],
    ['0.5Ki', '512'],
    ['1.1Ki', '1126400m'],
    ['1000M', '1G'],
    ['1500M', '1500M'],
    ['3000k', '3M'],
    ['1000', '1k'],
    ['2048', '2048'],
    ['1.5', '1500m'],
    ['0.1', '100m'],
    ['100m', '100m'],
    ['0.1n', '1n'],
    ['1e3', '1e3'],
    ['1000e0', '1e3'],
    ['1E3', '1e3'],
    ['5e1', '50'],
    ['1e-3', '1e-3'],
    ['0', '0'],
    ['0Gi', '0'],
    ['+1Gi', '1Gi'],
    ['-1Gi', '-1Gi'],
  ];
  for (const [input, want] of cases) assert.equal(canonicalQuantity(input), want, input);
  assert.equal(canonicalQuantity('lots'), undefined);
});

describe('quantities on the wire', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster({ controllers: false });
  });
  after(() => c.stop());

  it('stores and serves PV and PVC quantities in canonical form; invalid ones are still rejected', async () => {
    const pvc = pvcBody('q');
    (pvc.spec as { resources: { requests: Record<string, unknown> } }).resources.requests.storage = '1024Mi';
    const created = await raw(c, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', {
      body: JSON.stringify(pvc),
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(
      created.json<{ spec: { resources: { requests: { storage: string } } } }>().spec.resources.requests.storage,
      '1Gi',
    );
    const pv = pvBody('q-pv');
    (pv.spec as { capacity: Record<string, unknown> }).capacity.storage = '0.5Gi';
    const pvRes = await raw(c, 'POST', '/api/v1/persistentvolumes', { body: JSON.stringify(pv) });
    assert.equal(pvRes.json<{ spec: { capacity: { storage: string } } }>().spec.capacity.storage, '512Mi');
    // Sending the original text again changes nothing: no new resourceVersion.
    const stored = created.json<{ metadata: { resourceVersion: string } }>();
    const again = await raw(c, 'PUT', '/api/v1/namespaces/default/persistentvolumeclaims/q', {
      body: JSON.stringify({ ...pvc, metadata: { name: 'q', resourceVersion: stored.metadata.resourceVersion } }),
    });
    assert.equal(again.status, 200, again.text);
    assert.equal(
      again.json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion,
      stored.metadata.resourceVersion,
    );
    (pvc.spec as { resources: { requests: Record<string, unknown> } }).resources.requests.storage = 'lots';
    const bad = await raw(c, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', {
      body: JSON.stringify({ ...pvc, metadata: { name: 'q2' } }),
    });
    assert.equal(bad.status, 422);
  });
});
