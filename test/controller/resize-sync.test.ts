// syncResize on in-process fakes, asserting the Next it returns where the resize loop shares the other loops'
// failure tail: an expand() interrupted by shutdown is not a failure.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { waitForEvent } from '../../src/controller/next.ts';
import type { ExpandResult } from '../../src/controller/provisioner.ts';
import { createResizeMetrics } from '../../src/controller/resize/resize-metrics.ts';
import { syncResize } from '../../src/controller/resize/resize-sync.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../../src/types/annotations.ts';
import { fakeController, interruptedBy, recordEvents } from './fakes.ts';
import { MemoryProvisioner } from './harness.ts';

describe('syncResize', () => {
  it('an expand() interrupted by shutdown is not a failure: no event, no record, waitForEvent (as for claims)', async () => {
    const stop = new AbortController();
    const expand: () => Promise<ExpandResult> = interruptedBy(stop);
    const f = fakeController(Object.assign(new MemoryProvisioner(), { expand }));
    f.t = { ...f.t, signal: stop.signal };
    const events = recordEvents(f);
    f.classes.upsert({
      metadata: { name: 'sc', uid: 'sc-uid', resourceVersion: '1' },
      provisioner: f.s.provisionerName,
      allowVolumeExpansion: true,
    });
    f.volumes.upsert({
      metadata: { name: 'pv-1', uid: 'pv-uid', annotations: { [ANN_DYNAMICALLY_PROVISIONED]: f.s.provisionerName } },
      spec: { capacity: { storage: '1Gi' }, claimRef: { uid: 'uid-1', namespace: 'ns', name: 'c' } },
    });
    const claim = {
      metadata: { name: 'c', namespace: 'ns', uid: 'uid-1', resourceVersion: '3' },
      spec: { volumeName: 'pv-1', storageClassName: 'sc', resources: { requests: { storage: '2Gi' } } },
      status: { phase: 'Bound' as const, capacity: { storage: '1Gi' } },
    };
    f.claims.upsert(claim);
    f.client.onPatch = () => claim;
    const next = await syncResize(f.s, f.t, createResizeMetrics(new Registry()), 'uid-1');
    assert.deepEqual(next, waitForEvent);
    assert.deepEqual(events, ['Resizing'], 'no VolumeResizeFailed');
    assert.equal(f.s.resizeRecords.get('uid-1'), undefined, 'no failure recorded');
  });
});
