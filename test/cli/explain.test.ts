// `kube-provisioner explain pvc NS/NAME` against an in-test embedded cluster with no provisioner running: the
// decision (no controller for the class's provisioner runs, so nothing will provision it), its reason and the facts
// (as a process: exit 0, text on stdout), JSON output, a claim whose class is missing, and a claim that does not
// exist (exit 1). explain-presence.test.ts runs controllers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NotFoundError } from '../../src/runtime/errors.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { explainPvc, parseClaimRef } from '../../src/cli/explain.ts';
import { CliOptionError } from '../../src/cli/flags.ts';
import { runCli, waitFor } from './cli-helpers.ts';

function claim(name: string, className: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: className, resources: { requests: { storage: '1Gi' } } },
  } as PersistentVolumeClaim;
}

describe('kube-provisioner explain pvc', () => {
  let cluster: TestCluster;
  let client: KubeClient;

  before(async () => {
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
    await client.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'explained' },
      provisioner: 'example.com/explained',
      volumeBindingMode: 'Immediate',
    } as never);
    await client.create(persistentVolumeClaims, claim('wants-volume', 'explained'));
    await client.create(persistentVolumeClaims, claim('no-class', 'missing-class'));
    // The cluster's PV controller hands the claim to the external provisioner (annotation) first.
    await waitFor('the storage-provisioner annotation', async () => {
      const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'wants-volume', {
        namespace: 'default',
      });
      return c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'];
    });
  });
  after(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('prints the decision, its reason and the facts, exit 0 (as a process)', async () => {
    const r = await runCli(['explain', 'pvc', 'default/wants-volume', '--kubeconfig', cluster.kubeconfigPath]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^PersistentVolumeClaim default\/wants-volume \(uid [0-9a-f-]+\)$/m);
    assert.match(r.stdout, /^Decision: wait \(NoController\) for provisioner example\.com\/explained$/m);
    assert.match(
      r.stdout,
      /^Why: No controller for provisioner example\.com\/explained is running \(never seen: .*\); no controller of kube-provisioner is running here$/m,
    );
    assert.match(
      r.stdout,
      /storage class: explained \(provisioner example\.com\/explained, Immediate, reclaim Delete\)/,
    );
  });

  it('-o json gives the same decision as data; a missing class is explained, not an error', async () => {
    const { explanation, text } = await explainPvc(
      { namespace: 'default', name: 'wants-volume' },
      { kubeconfig: cluster.kubeconfigPath, output: 'json' },
    );
    assert.equal(explanation.decision.code, 'NoController');
    assert.deepEqual(JSON.parse(text).decision.code, 'NoController');
    const missing = await explainPvc(
      { namespace: 'default', name: 'no-class' },
      { kubeconfig: cluster.kubeconfigPath, output: 'text' },
    );
    assert.notEqual(missing.explanation.decision.action, 'provision');
    assert.match(missing.text, /storage class: missing-class \(not found\)/);
  });

  it('a claim that does not exist is a NotFoundError (the command exits 1)', async () => {
    await assert.rejects(
      explainPvc({ namespace: 'default', name: 'nope' }, { kubeconfig: cluster.kubeconfigPath, output: 'text' }),
      NotFoundError,
    );
  });

  it('parses NS/NAME and a bare name, refuses anything else', () => {
    assert.deepEqual(parseClaimRef('ns/name'), { namespace: 'ns', name: 'name' });
    assert.deepEqual(parseClaimRef('name'), { namespace: 'default', name: 'name' });
    for (const bad of ['a/b/c', 'UPPER/x', '', 'ns/']) assert.throws(() => parseClaimRef(bad), CliOptionError, bad);
  });
});
