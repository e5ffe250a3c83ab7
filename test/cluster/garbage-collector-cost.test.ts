// The garbage collector's cost per deletion does not grow with the number of unrelated objects: it counts the
// objects it looks at (store lookups and index entries visited), and a Background, a Foreground and an Orphan
// deletion of an owner with three dependents look at exactly as many with 10 as with 1,000 unrelated objects
// (plain ones and dependents of other owners) in the store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject, OwnerReference } from '../../src/types/k8s.ts';
import { silentLogger } from '../../src/types/logger.ts';
import { GarbageCollector } from '../../src/cluster/controllers/garbage-collector.ts';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import type { PropagationPolicy } from '../../src/cluster/writes/deletion-finalizers.ts';

const NS = 'cost';

function deployment(name: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
    },
  };
}

function configMap(name: string, owners?: OwnerReference[]): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, ownerReferences: owners } };
}

function refTo(obj: KubeObject, blockOwnerDeletion = true): OwnerReference {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: obj.metadata.name!,
    uid: obj.metadata.uid!,
    blockOwnerDeletion,
  };
}

/** Objects the collector examines to carry out one deletion of an owner with three dependents. */
async function examinedPerDeletion(unrelated: number, policy: PropagationPolicy): Promise<number> {
  const store = new ClusterStore();
  store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const others = [0, 1, 2, 3, 4].map((i) => store.create('deployments', deployment(`other-${i}`)));
  for (let i = 0; i < unrelated; i++) {
    // Half plain objects, half dependents of other owners.
    store.create('configmaps', configMap(`unrelated-${i}`, i % 2 ? [refTo(others[i % others.length])] : undefined));
  }
  const owner = store.create('deployments', deployment('owner'));
  for (const name of ['dep-a', 'dep-b', 'dep-c']) store.create('configmaps', configMap(name, [refTo(owner)]));
  const gc = new GarbageCollector({ store, logger: silentLogger });
  try {
    gc.start();
    await gc.idle();
    const before = gc.examined;
    store.deleteEntry('deployments', NS, 'owner', { propagationPolicy: policy });
    await gc.idle();
    assert.equal(store.get('deployments', NS, 'owner'), undefined, `${policy}: owner left`);
    const left = ['dep-a', 'dep-b', 'dep-c'].filter((n) => store.get('configmaps', NS, n));
    assert.deepEqual(left, policy === 'Orphan' ? ['dep-a', 'dep-b', 'dep-c'] : [], `${policy}: dependents`);
    assert.equal(
      store.list('configmaps', { namespace: NS }).items.length,
      unrelated + left.length,
      `${policy}: unrelated objects touched`,
    );
    return gc.examined - before;
  } finally {
    gc.stop();
  }
}

test('objects examined per deletion do not depend on the number of unrelated objects', async () => {
  for (const policy of ['Background', 'Foreground', 'Orphan'] as const) {
    const small = await examinedPerDeletion(10, policy);
    const large = await examinedPerDeletion(1_000, policy);
    assert.ok(small > 0, `${policy}: nothing counted`);
    assert.equal(large, small, `${policy}: ${small} objects examined with 10 unrelated, ${large} with 1,000`);
  }
});
