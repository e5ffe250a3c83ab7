// dev's outcome printer keeps little per event (outcomeEventTransform): a provisioning outcome keeps the fields of
// its line, every other event only its identity. Whole events were 113 MB of dev's heap after 10,000 claims.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  OUTCOME_FIELD_SELECTOR,
  outcomeEventTransform,
  outcomeLine,
  printProvisioningOutcomes,
} from '../../src/cli/dev-outcomes.ts';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import { coreEvents } from '../../src/runtime/resources.ts';
import { startCluster } from '../../src/testing/index.ts';
import type { CoreEvent } from '../../src/types/k8s.ts';

const START = Date.parse('2026-12-01T10:00:00Z');

function event(reason: string, at: string, message = `message of ${reason}`): CoreEvent {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: `claim-1.${reason}`,
      namespace: 'default',
      uid: 'e-uid',
      resourceVersion: '42',
      creationTimestamp: at,
      managedFields: [{ manager: 'kube-provisioner', operation: 'Update', fieldsV1: { 'f:message': {} } }],
    },
    involvedObject: {
      kind: 'PersistentVolumeClaim',
      namespace: 'default',
      name: 'claim-1',
      uid: 'c-uid',
      apiVersion: 'v1',
      resourceVersion: '7',
    },
    reason,
    message,
    source: { component: 'kube-provisioner.io/hostpath_vm_0123456789abcdef' },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
    type: reason === 'ProvisioningSucceeded' ? 'Normal' : 'Warning',
    reportingComponent: 'kube-provisioner.io/hostpath',
    reportingInstance: 'vm',
  } as CoreEvent;
}

describe('outcomeEventTransform', () => {
  const transform = outcomeEventTransform(START);

  it('keeps an outcome after the start with the same line, and little else', () => {
    for (const reason of ['ProvisioningSucceeded', 'ProvisioningFailed', 'ProvisioningGivenUp']) {
      const original = event(reason, '2026-12-01T10:00:05Z');
      const line = outcomeLine(original);
      const slim = transform(structuredClone(original));
      assert.equal(outcomeLine(slim), line);
      assert.equal(slim.involvedObject.uid, 'c-uid');
      assert.equal(slim.metadata.resourceVersion, '42');
      assert.ok(JSON.stringify(slim).length < JSON.stringify(original).length / 2, JSON.stringify(slim));
    }
  });

  it('keeps only the identity of other events and of outcomes from before the start', () => {
    for (const e of [
      event('Provisioning', '2026-12-01T10:00:05Z'),
      event('ExternalProvisioning', '2026-12-01T10:00:05Z'),
      event('ProvisioningSucceeded', '2026-12-01T09:59:58Z'),
    ]) {
      const slim = transform(structuredClone(e));
      assert.deepEqual(slim, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: e.metadata.name, namespace: 'default', resourceVersion: '42' },
      });
    }
  });
});

describe('OUTCOME_FIELD_SELECTOR', () => {
  it('lists a claim outcome and leaves out the two events every claim gets (and events of other kinds)', () => {
    const store = new ClusterStore();
    store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    for (const reason of ['ExternalProvisioning', 'Provisioning', 'ProvisioningSucceeded', 'ProvisioningFailed']) {
      const e = event(reason, '2026-12-01T10:00:05Z');
      delete (e.metadata as { uid?: string }).uid;
      delete (e.metadata as { managedFields?: unknown }).managedFields;
      delete (e.metadata as { resourceVersion?: string }).resourceVersion;
      e.metadata.name = `claim-1.${reason.toLowerCase()}`;
      store.create('events', e);
    }
    const other = event('ProvisioningSucceeded', '2026-12-01T10:00:05Z');
    other.metadata = { name: 'pod-event', namespace: 'default' };
    other.involvedObject = { ...other.involvedObject, kind: 'Pod' };
    store.create('events', other);
    const listed = (store.list('events', { fieldSelector: OUTCOME_FIELD_SELECTOR }).items as CoreEvent[]).map(
      (e) => e.reason,
    );
    assert.deepEqual(listed.sort(), ['ProvisioningFailed', 'ProvisioningSucceeded']);
  });
});

describe('printProvisioningOutcomes', () => {
  it('writes the lines of one turn in one call (a synchronous stdout write per line was 2.7% of the thread)', async () => {
    const cluster = await startCluster();
    const stop = new AbortController();
    try {
      // 40 outcomes recorded before the printer starts: its first list delivers them all in one turn.
      const at = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
      for (let i = 0; i < 40; i++) {
        const e = event('ProvisioningSucceeded', at, `provisioned volume pvc-${i}`);
        e.metadata = { name: `claim-${i}.outcome`, namespace: 'default' };
        e.involvedObject = { ...e.involvedObject, name: `claim-${i}`, uid: `c-uid-${i}` };
        await cluster.client.create(coreEvents, e);
      }
      const writes: string[] = [];
      let lines = 0;
      let allPrinted: () => void = () => {};
      const printedAll = new Promise<void>((resolve) => (allPrinted = resolve));
      const printing = printProvisioningOutcomes(
        cluster.client,
        Date.parse(at),
        (text) => {
          writes.push(text);
          lines += text.split('\n').length;
          if (lines >= 40) allPrinted();
        },
        stop.signal,
      );
      await printedAll;
      stop.abort();
      await printing;
      const all = writes.join('\n').split('\n');
      assert.equal(all.length, 40, 'each outcome once');
      assert.equal(new Set(all).size, 40);
      assert.ok(
        all.every((l) => /^claim default\/claim-\d+: provisioned volume pvc-\d+$/.test(l)),
        all[0],
      );
      assert.equal(writes.length, 1, `40 lines of one turn took ${writes.length} writes`);
    } finally {
      stop.abort();
      await cluster.stop();
    }
  });
});
