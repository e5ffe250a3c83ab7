// Event message bounds: shortenText keeps head and tail within a byte budget without splitting characters, and
// boundedEventSink applies the 4 KiB bound to every message it passes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundedEventSink, MAX_EVENT_MESSAGE_BYTES } from '../../src/controller/event-bounds.ts';
import { shortenText } from '../../src/types/text.ts';
import type { KubeObject } from '../../src/types/k8s.ts';

test('shortenText leaves short text alone and bounds long text by UTF-8 bytes, head and tail kept', () => {
  assert.equal(shortenText('short', 1024), 'short');
  const exact = 'x'.repeat(1024);
  assert.equal(shortenText(exact, 1024), exact);
  const long = `HEAD${'m'.repeat(200_000)}TAIL`;
  const s = shortenText(long, 1024);
  assert.ok(Buffer.byteLength(s) <= 1024, `${Buffer.byteLength(s)} bytes`);
  assert.ok(s.startsWith('HEAD') && s.endsWith('TAIL'));
  assert.match(s, /…\(200008 bytes, shortened\)…/);
});

test('shortenText never splits a multi-byte character or a surrogate pair', () => {
  for (const ch of ['é', '€', '😀']) {
    for (const budget of [100, 101, 102, 103, 257]) {
      const s = shortenText(ch.repeat(5000), budget);
      assert.ok(Buffer.byteLength(s) <= budget, `${ch} ${budget}`);
      assert.ok(!s.includes('\uFFFD'));
      assert.equal(Buffer.from(s, 'utf8').toString('utf8'), s, 'round-trips: no lone surrogate');
      const [head, tail] = s.split(/…\(\d+ bytes, shortened\)…/);
      assert.ok([...head].every((c) => c === ch) && [...tail].every((c) => c === ch));
    }
  }
});

test('boundedEventSink passes every event on with its message bounded to 4 KiB', () => {
  const seen: Array<{ type: string; reason: string; message: string }> = [];
  const sink = boundedEventSink({ event: (_o, type, reason, message) => seen.push({ type, reason, message }) });
  const obj: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', namespace: 'n' } };
  sink.event(obj, 'Warning', 'ProvisioningFailed', `bad: ${'p'.repeat(300_000)}`);
  sink.event(obj, 'Normal', 'Provisioning', 'fine');
  assert.equal(seen.length, 2);
  assert.ok(Buffer.byteLength(seen[0].message) <= MAX_EVENT_MESSAGE_BYTES);
  assert.ok(seen[0].message.startsWith('bad: ppp'));
  assert.deepEqual(seen[1], { type: 'Normal', reason: 'Provisioning', message: 'fine' });
});
