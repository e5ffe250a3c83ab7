// explain's judgement of who is running (pure, explain-presence.ts), for each source the cluster offers: a live
// heartbeat Lease (every mode, `none` included), the leader-election Lease named after the provisioner (ours, or the
// Go library's in lease mode), the claim's per-claim lock; none of them, with or without other provisioners'
// controllers running; and the next retry explain derives for a claim in error backoff (not only infeasible) from
// its last ProvisioningFailed event and the retry timings the controller publishes. The cluster-level flows are in
// test/cli/explain-presence.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judgePresence, type ControllerPresence } from '../../src/controller/presence/explain-presence.ts';
import { explainDecision } from '../../src/controller/claim/explain-claim.ts';
import {
  ANN_HEARTBEAT_PROVISIONER,
  LABEL_HEARTBEAT,
  parseHeartbeat,
  type HeartbeatRetry,
} from '../../src/controller/presence/heartbeat.ts';
import { leaseNameFor } from '../../src/controller/options/controller-options.ts';
import { ANN_CONTROL_PLANE_LEADER } from '../../src/types/annotations.ts';
import type { CoreEvent, Lease } from '../../src/types/k8s.ts';
import { formatMicroTime } from '../../src/types/time.ts';
import { newClaim } from './fixtures.ts';

const P = 'example.com/served';
const NOW = Date.UTC(2026, 0, 1, 12);

function lease(
  name: string,
  holder: string,
  renewedAgoMs: number,
  durationSeconds: number,
  heartbeatOf?: string,
): Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace: 'kube-system',
      ...(heartbeatOf
        ? { labels: { [LABEL_HEARTBEAT]: 'true' }, annotations: { [ANN_HEARTBEAT_PROVISIONER]: heartbeatOf } }
        : {}),
    },
    spec: {
      holderIdentity: holder,
      renewTime: formatMicroTime(NOW - renewedAgoMs),
      leaseDurationSeconds: durationSeconds,
    },
  };
}

const beats = (...ls: Lease[]) => ls.map((l) => parseHeartbeat(l, NOW)).filter((h) => h !== undefined);
const claim = (annotations: Record<string, string> = {}) => newClaim('c', 'uid-c', 'served', P, '', annotations);

describe('explain: who is running', () => {
  it('a live heartbeat (any mode) says a controller serves the name', () => {
    const v = judgePresence(
      { heartbeats: beats(lease('hb', 'pod-1', 1_000, 90, P)), electionLeases: [] },
      P,
      claim(),
      NOW,
    );
    assert.equal(v.running, true);
    assert.match(v.facts.join('\n'), /controllers serving example\.com\/served: 1 running \(pod-1 in kube-system/);
  });

  it("the leader-election Lease named after the provisioner (ours, or the Go library's) says so too", () => {
    const held = lease(leaseNameFor(P), 'go-controller_abc', 2_000, 15);
    const v = judgePresence({ heartbeats: [], electionLeases: [held] }, P, claim(), NOW);
    assert.equal(v.running, true);
    assert.match(v.facts.join('\n'), /leader-election Lease kube-system\/\S+ held by go-controller_abc/);
    const expired = lease(leaseNameFor(P), 'go-controller_abc', 60_000, 15);
    assert.equal(judgePresence({ heartbeats: [], electionLeases: [expired] }, P, claim(), NOW).running, false);
  });

  it('a live per-claim lock on the claim says so too; an expired one does not', () => {
    const lock = (renewedAgoMs: number) => ({
      [ANN_CONTROL_PLANE_LEADER]: JSON.stringify({
        holderIdentity: 'node-a_1',
        leaseDurationSeconds: 15,
        acquireTime: '',
        renewTime: new Date(NOW - renewedAgoMs).toISOString(),
        leaderTransitions: 0,
      }),
    });
    const live = judgePresence({ heartbeats: [], electionLeases: [] }, P, claim(lock(1_000)), NOW);
    assert.equal(live.running, true);
    assert.match(live.facts.join('\n'), /per-claim lock is live \(held by node-a_1\)/);
    assert.equal(judgePresence({ heartbeats: [], electionLeases: [] }, P, claim(lock(60_000)), NOW).running, false);
  });

  it('nothing running at all: no controller, never seen, and none of kube-provisioner here', () => {
    const v = judgePresence({ heartbeats: [], electionLeases: [] }, P, claim(), NOW);
    assert.equal(v.running, false);
    assert.equal(
      v.reason,
      'No controller for provisioner example.com/served is running (never seen: no heartbeat or leader-election Lease names it); no controller of kube-provisioner is running here',
    );
  });

  it('an expired heartbeat of this name and live ones of others: last seen, and who runs instead', () => {
    const p: ControllerPresence = {
      heartbeats: beats(
        lease('mine', 'pod-1', 600_000, 90, P),
        lease('a', 'pod-2', 1_000, 90, 'example.com/b'),
        lease('b', 'pod-3', 1_000, 90, 'example.com/a'),
      ),
      electionLeases: [],
    };
    const v = judgePresence(p, P, claim(), NOW);
    assert.equal(v.running, false);
    assert.equal(
      v.reason,
      `No controller for provisioner example.com/served is running (last seen ${new Date(NOW - 600_000).toISOString()}, heartbeat expired); controllers running here serve example.com/a, example.com/b`,
    );
  });
});

describe('explain: the next retry of a claim in error backoff', () => {
  const retry: HeartbeatRetry = {
    backoffBaseMs: 1_000,
    backoffMaxMs: 300_000,
    exponentialBackoff: true,
    infeasibleDelayMs: 600_000,
  };
  const failed = (count: number, message: string): CoreEvent => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'e', namespace: 'default' },
    involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'c', uid: 'uid-c' },
    reason: 'ProvisioningFailed',
    type: 'Warning',
    message,
    count,
    lastTimestamp: new Date(NOW - 1_000).toISOString(),
  });
  const decision = { action: 'provision', code: 'Provision', reason: 'the claim needs a volume' } as const;

  it('is the last failure plus the backoff its count reached', () => {
    const e = explainDecision({
      claim: claim(),
      provisionerName: P,
      decision,
      events: [failed(3, 'failed to provision volume with StorageClass "served": backend timeout')],
      retry,
      now: NOW,
    });
    assert.equal(e.nextRetryAt, new Date(NOW - 1_000 + 4_000).toISOString());
    assert.match(e.nextRetry ?? '', /^backoff after 3 failed attempts; /);
  });

  it('is capped by the maximum backoff, and says when it is already due', () => {
    const e = explainDecision({
      claim: claim(),
      provisionerName: P,
      decision,
      events: [failed(30, 'backend timeout')],
      retry: { ...retry, backoffMaxMs: 500 },
      now: NOW,
    });
    assert.equal(e.nextRetryAt, new Date(NOW - 1_000 + 500).toISOString());
    assert.match(e.nextRetry ?? '', /^backoff after 30 failed attempts \(due now\); /);
  });
});
