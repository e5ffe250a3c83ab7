// The CSI client against the stub plugin over a real unix socket: start-up (socket appears late, Probe until
// ready, nothing created before), refusing a plugin that cannot provision, per-call deadlines, cancellation, and
// csi_sidecar_operations_seconds as external-provisioner exports it.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { CsiClient, socketPathOf, CsiAddressError } from '../../src/csi/csi-client.ts';
import { CsiError, GRPC_CODES } from '../../src/csi/grpc-status.ts';
import { CSI_OPERATIONS_BUCKETS, CSI_OPERATIONS_METRIC } from '../../src/csi/csi-metrics.ts';
import { CsiProvisioner } from '../../src/csi/csi-provisioner.ts';
import { CsiStartupError } from '../../src/csi/startup.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { StubCsiPlugin } from '../../src/testing/csi-stub-plugin.ts';
import { waitFor } from '../support/wait.ts';
import { FakeCluster } from './fake-cluster.ts';

const stubs: StubCsiPlugin[] = [];
const clients: Array<{ close(): void }> = [];
async function stub(o: Parameters<typeof StubCsiPlugin.start>[0] = {}): Promise<StubCsiPlugin> {
  const s = await StubCsiPlugin.start(o);
  stubs.push(s);
  return s;
}
after(async () => {
  for (const c of clients) c.close();
  await Promise.all(stubs.map((s) => s.stop()));
});

describe('CSI start-up (external-provisioner main)', () => {
  it('waits for the socket to appear, probes until ready, and makes no CreateVolume before; then GetPluginInfo and capabilities', async () => {
    const s = await stub({ listen: false, ready: false });
    const starting = CsiProvisioner.start({
      address: s.address,
      cluster: new FakeCluster(),
      startupIntervalMs: 10,
      logger: silentLogger,
    });
    let started: CsiProvisioner | undefined;
    void starting.then(
      (p) => (started = p),
      () => {},
    );
    await s.listen();
    await waitFor('two not-ready probes', () => s.count('Probe') >= 2);
    assert.equal(started, undefined, 'not started while the plugin is not ready');
    s.ready = true;
    const p = await starting;
    clients.push(p);
    assert.equal(p.driverName, 'stub.csi.kube-provisioner.io');
    const order = s.calls.map((c) => c.method);
    assert.ok(order.lastIndexOf('Probe') < order.indexOf('GetPluginInfo'), 'GetPluginInfo only after a ready Probe');
    assert.deepEqual(order.slice(order.indexOf('GetPluginInfo')), [
      'GetPluginInfo',
      'GetPluginCapabilities',
      'ControllerGetCapabilities',
    ]);
    assert.equal(s.count('CreateVolume'), 0);
  });

  it("a Probe reply without `ready` means ready (the spec's default)", async () => {
    const s = await stub({ ready: undefined });
    const p = await CsiProvisioner.start({ address: s.address, cluster: new FakeCluster(), startupIntervalMs: 10 });
    clients.push(p);
    assert.equal(s.count('Probe'), 1);
  });

  it('refuses a plugin without CREATE_DELETE_VOLUME, or without the controller service', async () => {
    const s = await stub({ controllerCapabilities: ['GET_CAPACITY'] });
    await assert.rejects(
      CsiProvisioner.start({ address: s.address, cluster: new FakeCluster(), startupIntervalMs: 10 }),
      (e: unknown) => e instanceof CsiStartupError && /CREATE_DELETE_VOLUME/.test(e.message),
    );
    const n = await stub({ pluginCapabilities: [] });
    await assert.rejects(
      CsiProvisioner.start({ address: n.address, cluster: new FakeCluster(), startupIntervalMs: 10 }),
      /CONTROLLER_SERVICE/,
    );
    assert.equal(
      n.count('ControllerGetCapabilities'),
      0,
      'no controller call to a plugin without the controller service',
    );
  });

  it('a Probe failing with another code than DEADLINE_EXCEEDED/UNAVAILABLE is fatal', async () => {
    const s = await stub();
    s.script('Probe', { error: 'FailedPrecondition', message: 'unhealthy' });
    await assert.rejects(
      CsiProvisioner.start({ address: s.address, cluster: new FakeCluster(), startupIntervalMs: 10 }),
      CsiStartupError,
    );
  });
});

describe('CSI calls', () => {
  it('accepts /path, unix:///path and unix:/path, and refuses other schemes', () => {
    assert.equal(socketPathOf('/run/csi/socket'), '/run/csi/socket');
    assert.equal(socketPathOf('unix:///run/csi/socket'), '/run/csi/socket');
    assert.equal(socketPathOf('unix:/run/csi/socket'), '/run/csi/socket');
    assert.throws(() => socketPathOf('tcp://127.0.0.1:10000'), CsiAddressError);
  });

  it('a call that outlives --timeout fails with DEADLINE_EXCEEDED; the plugin saw the call', async () => {
    const s = await stub();
    const c = await CsiClient.connect({ address: s.address, timeoutMs: 200 });
    clients.push(c);
    s.script('CreateVolume', { hang: true });
    await assert.rejects(
      c.call('createVolume', { name: 'pvc-x' }),
      (e: unknown) =>
        e instanceof CsiError && e.code === GRPC_CODES.DeadlineExceeded && e.codeName === 'DeadlineExceeded',
    );
    assert.equal(s.count('CreateVolume'), 1);
  });

  it('an aborted signal cancels the call (CANCELLED)', async () => {
    const s = await stub();
    const c = await CsiClient.connect({ address: s.address });
    clients.push(c);
    s.script('DeleteVolume', { hang: true });
    const ac = new AbortController();
    const call = c.call('deleteVolume', { volumeId: 'v' }, { signal: ac.signal });
    await waitFor('the call reached the plugin', () => s.count('DeleteVolume') === 1);
    ac.abort();
    await assert.rejects(call, (e: unknown) => e instanceof CsiError && e.code === GRPC_CODES.Canceled);
  });

  it('a plugin error keeps its code and message', async () => {
    const s = await stub();
    const c = await CsiClient.connect({ address: s.address });
    clients.push(c);
    s.script('CreateVolume', { error: 'ResourceExhausted', message: 'no space in zone z1' });
    await assert.rejects(
      c.call('createVolume', { name: 'a' }),
      (e: unknown) => e instanceof CsiError && e.code === 8 && e.details === 'no space in zone z1',
    );
  });

  it('no plugin listening: UNAVAILABLE', async () => {
    const s = await stub({ listen: false });
    const c = await CsiClient.connect({ address: s.address, timeoutMs: 2000 });
    clients.push(c);
    await assert.rejects(
      c.call('probe', {}),
      (e: unknown) => e instanceof CsiError && e.code === GRPC_CODES.Unavailable,
    );
  });

  it('csi_sidecar_operations_seconds{driver_name,method_name,grpc_status_code}, csi-lib-utils buckets, in the injected registry', async () => {
    const s = await stub();
    const registry = new Registry();
    const c = await CsiClient.connect({ address: s.address, registry });
    clients.push(c);
    await c.call('probe', {});
    c.driverName = 'stub.csi.kube-provisioner.io';
    await c.call('createVolume', { name: 'pvc-m' });
    s.script('DeleteVolume', { hang: true });
    await c.call('deleteVolume', { volumeId: 'pvc-m' }, { timeoutMs: 200 }).catch(() => {});
    const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === CSI_OPERATIONS_METRIC);
    assert.ok(metric, 'the histogram is registered in the given registry');
    const counts = (
      metric.values as Array<{ metricName?: string; labels: Record<string, string | number>; value: number }>
    )
      .filter((v) => v.metricName === `${CSI_OPERATIONS_METRIC}_count`)
      .map((v) => `${v.labels.driver_name} ${v.labels.method_name} ${v.labels.grpc_status_code} ${v.value}`)
      .sort();
    assert.deepEqual(counts, [
      'stub.csi.kube-provisioner.io /csi.v1.Controller/CreateVolume OK 1',
      'stub.csi.kube-provisioner.io /csi.v1.Controller/DeleteVolume DeadlineExceeded 1',
      'unknown-driver /csi.v1.Identity/Probe OK 1',
    ]);
    const buckets = (metric.values as Array<{ metricName?: string; labels: Record<string, string | number> }>)
      .filter(
        (v) => v.metricName === `${CSI_OPERATIONS_METRIC}_bucket` && v.labels.method_name === '/csi.v1.Identity/Probe',
      )
      .map((v) => v.labels.le);
    assert.deepEqual(buckets, [...CSI_OPERATIONS_BUCKETS, '+Inf']);
    assert.deepEqual(await new Registry().getMetricsAsJSON(), [], 'nothing global');
  });
});
