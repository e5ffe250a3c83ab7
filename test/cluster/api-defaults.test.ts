// Defaulting of pod specs as kube-apiserver 1.32 applies it (k/k pkg/apis/core/v1/defaults.go SetDefaults_Pod,
// SetDefaults_PodSpec, SetDefaults_Container, SetDefaults_Probe, the volume sources' defaults, the declarative
// `+default` markers of k8s.io/api, and pkg/apis/apps/v1/defaults.go): objects are created through client-node
// without the defaulted fields, read back over raw HTTPS (client-node would drop what its models lack) and
// compared with the object 1.32 gives, written out by hand from those rules.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  CoreV1Api,
  type V1DaemonSet,
  type V1Deployment,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { raw } from './api-harness.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NS = 'defaults';
let c: TestCluster;
let core: CoreV1Api;
let apps: AppsV1Api;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  apps = c.kubeConfig.makeApiClient(AppsV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});
after(() => c.stop());

async function read(path: string): Promise<Obj> {
  const res = await raw(c, 'GET', path);
  assert.equal(res.status, 200, res.text);
  return res.json<Obj>();
}

/** What every defaulted container carries besides its own fields. */
const CONTAINER_DEFAULTS = {
  resources: {},
  terminationMessagePath: '/dev/termination-log',
  terminationMessagePolicy: 'File',
};
/** SetDefaults_PodSpec. */
const POD_SPEC_DEFAULTS = {
  dnsPolicy: 'ClusterFirst',
  restartPolicy: 'Always',
  schedulerName: 'default-scheduler',
  securityContext: {},
  terminationGracePeriodSeconds: 30,
};
const PROBE_DEFAULTS = { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 };

/** A pod spec with every defaulted construct left out. */
function bareSpec(): V1PodSpec & Obj {
  return {
    initContainers: [{ name: 'init', image: 'registry.example:5000/tools' }],
    containers: [
      { name: 'app', image: 'nginx' },
      {
        name: 'side',
        image: 'busybox:1.36',
        ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }],
        env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        livenessProbe: { httpGet: { port: 8080 } },
        readinessProbe: { grpc: { port: 9090 }, periodSeconds: 3 },
        startupProbe: { exec: { command: ['true'] } },
        lifecycle: { preStop: { httpGet: { port: 'http' } } },
        resources: { limits: { cpu: '0.5', memory: '128Mi' }, requests: { cpu: '0.0001' } },
        volumeMounts: [{ name: 'conf', mountPath: '/etc/conf' }],
      },
      { name: 'pinned', image: `quay.io/x/y@sha256:${'0123456789abcdef'.repeat(4)}` },
      { name: 'latest', image: 'docker.io/library/alpine:latest' },
    ],
    volumes: [
      { name: 'conf', configMap: { name: 'conf' } },
      { name: 'scratch' },
      {
        name: 'token',
        projected: {
          sources: [
            { serviceAccountToken: { path: 'token' } },
            { downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } },
          ],
        },
      },
      { name: 'creds', secret: { secretName: 's', defaultMode: 256 } },
      { name: 'host', hostPath: { path: '/var/tmp' } },
    ],
  };
}

/** The same spec as kube-apiserver 1.32 stores it (PodSpec defaults only; SetDefaults_Pod adds more to Pods). */
function defaultedSpec(): Obj {
  return {
    ...POD_SPEC_DEFAULTS,
    initContainers: [
      { name: 'init', image: 'registry.example:5000/tools', imagePullPolicy: 'Always', ...CONTAINER_DEFAULTS },
    ],
    containers: [
      { name: 'app', image: 'nginx', imagePullPolicy: 'Always', ...CONTAINER_DEFAULTS },
      {
        name: 'side',
        image: 'busybox:1.36',
        imagePullPolicy: 'IfNotPresent',
        ports: [
          { containerPort: 80, protocol: 'TCP' },
          { containerPort: 53, protocol: 'UDP' },
        ],
        env: [{ name: 'POD', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } }],
        livenessProbe: { httpGet: { port: 8080, path: '/', scheme: 'HTTP' }, ...PROBE_DEFAULTS },
        readinessProbe: { grpc: { port: 9090, service: '' }, ...PROBE_DEFAULTS, periodSeconds: 3 },
        startupProbe: { exec: { command: ['true'] }, ...PROBE_DEFAULTS },
        lifecycle: { preStop: { httpGet: { port: 'http', path: '/', scheme: 'HTTP' } } },
        // SetDefaults_ResourceList rounds up to milli units.
        resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '1m' } },
        volumeMounts: [{ name: 'conf', mountPath: '/etc/conf' }],
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
      },
      // A digest without a tag is not `latest`.
      {
        name: 'pinned',
        image: `quay.io/x/y@sha256:${'0123456789abcdef'.repeat(4)}`,
        imagePullPolicy: 'IfNotPresent',
        ...CONTAINER_DEFAULTS,
      },
      { name: 'latest', image: 'docker.io/library/alpine:latest', imagePullPolicy: 'Always', ...CONTAINER_DEFAULTS },
    ],
    volumes: [
      { name: 'conf', configMap: { name: 'conf', defaultMode: 420 } },
      { name: 'scratch', emptyDir: {} },
      {
        name: 'token',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
            { downwardAPI: { items: [{ path: 'n', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } }] } },
          ],
        },
      },
      { name: 'creds', secret: { secretName: 's', defaultMode: 256 } },
      { name: 'host', hostPath: { path: '/var/tmp', type: '' } },
    ],
  };
}

describe('defaulting of pod specs (kube-apiserver 1.32)', () => {
  it('defaults a Pod: SetDefaults_Pod, SetDefaults_PodSpec, containers, probes, ports, volumes', async () => {
    await core.createNamespacedPod({ namespace: NS, body: { metadata: { name: 'bare' }, spec: bareSpec() } as V1Pod });
    const pod = await read(`/api/v1/namespaces/${NS}/pods/bare`);
    const want = defaultedSpec();
    // SetDefaults_Pod (Pods only, not templates): requests default to limits, service links on.
    want.containers[1].resources = {
      limits: { cpu: '500m', memory: '128Mi' },
      requests: { cpu: '1m', memory: '128Mi' },
    };
    want.enableServiceLinks = true;
    assert.deepEqual(pod.spec, want);
    // ComputePodQOS on the defaulted requests: a limit without an equal request.
    assert.equal(pod.status.qosClass, 'Burstable');
    // What the typed client sees too.
    const typed = await core.readNamespacedPod({ name: 'bare', namespace: NS });
    assert.equal(typed.spec!.containers[0].imagePullPolicy, 'Always');
    assert.equal(typed.spec!.containers[1].terminationMessagePolicy, 'File');
  });

  it('gives hostNetwork pods host ports equal to their container ports', async () => {
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'hostnet' },
        spec: { hostNetwork: true, containers: [{ name: 'c', image: 'nginx:1', ports: [{ containerPort: 8080 }] }] },
      } as V1Pod,
    });
    const pod = await read(`/api/v1/namespaces/${NS}/pods/hostnet`);
    assert.deepEqual(pod.spec.containers[0].ports, [{ containerPort: 8080, hostPort: 8080, protocol: 'TCP' }]);
    assert.equal(pod.status.qosClass, 'BestEffort');
  });

  it('gives a pod whose cpu and memory limits default its requests the Guaranteed QoS class', async () => {
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'guaranteed' },
        spec: { containers: [{ name: 'c', image: 'nginx:1', resources: { limits: { cpu: '1', memory: '1Gi' } } }] },
      } as V1Pod,
    });
    const pod = await read(`/api/v1/namespaces/${NS}/pods/guaranteed`);
    assert.deepEqual(pod.spec.containers[0].resources, {
      limits: { cpu: '1', memory: '1Gi' },
      requests: { cpu: '1', memory: '1Gi' },
    });
    assert.equal(pod.status.qosClass, 'Guaranteed');
  });

  it('defaults a Deployment: SetDefaults_Deployment and its pod template (no Pod-only defaults)', async () => {
    const template = { metadata: { labels: { app: 'web' } }, spec: bareSpec() };
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { matchLabels: { app: 'web' } }, template },
      } as V1Deployment,
    });
    const d = await read(`/apis/apps/v1/namespaces/${NS}/deployments/web`);
    assert.deepEqual(d.spec, {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      // A PodTemplateSpec's ObjectMeta is a struct: Go writes its zero creationTimestamp as null.
      template: { metadata: { creationTimestamp: null, labels: { app: 'web' } }, spec: defaultedSpec() },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
    });
  });

  it('defaults a DaemonSet: SetDefaults_DaemonSet and its pod template', async () => {
    const template = {
      metadata: { labels: { app: 'agent' } },
      spec: { containers: [{ name: 'agent', image: 'agent:v2' }] },
    };
    await apps.createNamespacedDaemonSet({
      namespace: NS,
      body: {
        metadata: { name: 'agent' },
        spec: { selector: { matchLabels: { app: 'agent' } }, template },
      } as V1DaemonSet,
    });
    const ds = await read(`/apis/apps/v1/namespaces/${NS}/daemonsets/agent`);
    assert.deepEqual(ds.spec, {
      selector: { matchLabels: { app: 'agent' } },
      template: {
        metadata: { creationTimestamp: null, labels: { app: 'agent' } },
        spec: {
          ...POD_SPEC_DEFAULTS,
          containers: [{ name: 'agent', image: 'agent:v2', imagePullPolicy: 'IfNotPresent', ...CONTAINER_DEFAULTS }],
        },
      },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      revisionHistoryLimit: 10,
    });
  });

  it('keeps what the client set and defaults again on update', async () => {
    const template = {
      metadata: { labels: { app: 'kept' } },
      spec: { containers: [{ name: 'c', image: 'nginx', imagePullPolicy: 'Never' }], dnsPolicy: 'Default' },
    };
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: 'kept' },
        spec: { selector: { matchLabels: { app: 'kept' } }, template },
      } as V1Deployment,
    });
    const d = await read(`/apis/apps/v1/namespaces/${NS}/deployments/kept`);
    assert.equal(d.spec.template.spec.containers[0].imagePullPolicy, 'Never');
    assert.equal(d.spec.template.spec.dnsPolicy, 'Default');
    // A merge patch that adds a container: the new one is defaulted too.
    const patched = await raw(c, 'PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/kept`, {
      contentType: 'application/merge-patch+json',
      body: JSON.stringify({
        spec: {
          template: {
            spec: {
              containers: [
                { name: 'c', image: 'nginx' },
                { name: 'd', image: 'redis:7' },
              ],
            },
          },
        },
      }),
    });
    assert.equal(patched.status, 200, patched.text);
    const containers = patched.json<Obj>().spec.template.spec.containers;
    assert.deepEqual(
      containers.map((x: Obj) => x.imagePullPolicy),
      ['Always', 'IfNotPresent'],
    );
    assert.equal(patched.json<Obj>().metadata.generation, 2);
  });
});
