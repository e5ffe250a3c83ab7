// The embedded cluster's local Node: a DNS-safe name from the hostname, its hostname label, Ready.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { localNodeName, localNodeObject } from '../../src/cluster/controllers/local-node.ts';

test('local node: DNS-safe name from the hostname, hostname label, Ready', () => {
  assert.equal(localNodeName('My_Laptop.local'), 'my-laptop.local');
  assert.equal(localNodeName('---'), 'localhost');
  const nodeObj = localNodeObject('host-1', Date.parse('2026-01-01T00:00:00Z'));
  assert.equal(nodeObj.metadata.labels?.['kubernetes.io/hostname'], 'host-1');
  assert.deepEqual(
    nodeObj.status?.conditions?.map((c) => [c.type, c.status, c.lastHeartbeatTime]),
    [['Ready', 'True', '2026-01-01T00:00:00Z']],
  );
});
