// Controller metrics: the Go library's names, registered once per registry.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createControllerMetrics, METRIC_NAMES } from '../../src/controller/metrics.ts';

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
