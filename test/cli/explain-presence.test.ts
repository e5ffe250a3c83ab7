// explain knows who is running, from the cluster alone: with a controller of another provisioner running, a claim
// of an unserved provisioner (a typo in the class) is "No controller … is running; controllers running here serve
// …"; a running controller (mode none: only its heartbeat Lease says it runs) turns that into the real decision, and
// once its custom backend failed with an InfeasibleError the next retry is shown, from the ProvisioningFailed event
// and the retry timings the heartbeat publishes; after the controller stops, explain says when it was last seen.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InfeasibleError, ProvisionController, silentLogger, type Provisioner } from 'kube-provisioner';
import { startCluster, type TestCluster } from 'kube-provisioner/testing';
import { explainPvc } from '../../src/cli/explain.ts';
import { persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import type { PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { waitFor } from './cli-helpers.ts';

const SERVED = 'example.com/served';
const OTHER = 'example.com/other';

function storageClass(name: string, provisioner: string): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner,
    volumeBindingMode: 'Immediate',
  };
}
function claim(name: string, className: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: className, resources: { requests: { storage: '1Gi' } } },
  };
}

/** A custom backend that refuses every claim as infeasible (no checkClaim hook: explain cannot run its checks). */
const refusing: Provisioner = {
  provision: async () => {
    throw new InfeasibleError('the backend has no room');
  },
  delete: async () => {},
};

describe('explain: who is running', () => {
  let cluster: TestCluster;
  const controllers: ProvisionController[] = [];
  const explain = async (name: string) =>
    explainPvc({ namespace: 'default', name }, { kubeconfig: cluster.kubeconfigPath, output: 'text' });
  const start = (name: string, provisioner: Provisioner) => {
    const c = new ProvisionController(cluster.client, name, provisioner, {
      leaderElection: { mode: 'none' },
      retry: { infeasibleDelayMs: 600_000 },
      logger: silentLogger,
    });
    controllers.push(c);
    void c.run();
    return c;
  };

  before(async () => {
    cluster = await startCluster();
    await cluster.create(storageClasses, storageClass('typo', 'example.com/srved'));
    await cluster.create(storageClasses, storageClass('served', SERVED));
    start(OTHER, refusing);
  });
  after(async () => {
    for (const c of controllers) await c.stop();
    await cluster.stop();
  });

  it('a class naming a provisioner no controller serves: no controller, and who runs instead', async () => {
    await cluster.create(persistentVolumeClaims, claim('typo', 'typo'));
    const { explanation, text } = await waitFor("the other controller's heartbeat", async () => {
      const e = await explain('typo');
      return /serve example\.com\/other/.test(e.text) ? e : undefined;
    });
    assert.equal(explanation.decision.code, 'NoController');
    assert.match(text, /^Decision: wait \(NoController\) for provisioner example\.com\/srved$/m);
    assert.match(
      text,
      /^Why: No controller for provisioner example\.com\/srved is running \(never seen: .*\); controllers running here serve example\.com\/other$/m,
    );
  });

  it('a running controller (mode none) makes it the real decision; its infeasible backoff shows the next retry', async () => {
    await cluster.create(persistentVolumeClaims, claim('waits', 'served'));
    assert.equal((await explain('waits')).explanation.decision.code, 'NoController');
    start(SERVED, refusing);
    const { explanation, text } = await waitFor(
      'the infeasible failure, explained',
      async () => {
        const e = await explain('waits');
        return e.explanation.lastFailed && e.explanation.decision.code !== 'NoController' ? e : undefined;
      },
      30_000,
    );
    assert.match(text, /^Decision: provision \(Provision\) for provisioner example\.com\/served$/m);
    assert.match(text, /controllers serving example\.com\/served: 1 running/);
    const failedAt = Date.parse(explanation.lastFailed?.lastSeen ?? '');
    // The controller's own 10-minute slow retry (published in its heartbeat), not explain's 5-minute default.
    assert.equal(Date.parse(explanation.nextRetryAt ?? ''), failedAt + 600_000, text);
    assert.match(
      text,
      /^Next retry: \S+, slow retry after an infeasible error; at once if the claim, its class or the provisioner's configuration changes$/m,
    );
  });

  it('after the controller stops, explain says when it was last seen', async () => {
    await controllers.at(-1)?.stop();
    const { text } = await explain('waits');
    assert.match(
      text,
      /^Why: No controller for provisioner example\.com\/served is running \(last seen \S+Z, stopped\); controllers running here serve example\.com\/other$/m,
    );
  });
});

describe('explain without permission to list Leases', () => {
  it('says the running controllers are unknown and keeps the decision', async () => {
    const { judgePresence } = await import('../../src/controller/presence/explain-presence.ts');
    const verdict = judgePresence(
      { heartbeats: undefined, electionLeases: undefined },
      SERVED,
      claim('x', 'served'),
      Date.now(),
    );
    assert.equal(verdict.running, undefined);
    assert.match(verdict.facts.join('\n'), /running controllers: unknown/);
  });
});
