// The apps/v1, rbac.authorization.k8s.io/v1 and ServiceAccount kinds of the embedded API server, over HTTPS:
// kube's defaults (replicas, strategies, generation), the status subresource, one rejection per kind with the
// field cause kube-apiserver gives (selector/template mismatch, immutable selector and roleRef, rules
// without verbs, subjects of unknown kinds...), discovery and the kubectl table columns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { raw, type RawResponse } from './api-harness.ts';

interface Cause {
  reason: string;
  field: string;
  message: string;
}
interface Status {
  code: number;
  reason: string;
  details?: { causes?: Cause[] };
}
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NS = 'more-kinds';
const APPS = `/apis/apps/v1/namespaces/${NS}`;
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

let cluster: TestCluster;
const send = (method: string, path: string, body?: unknown, contentType?: string): Promise<RawResponse> =>
  raw(cluster, method, path, body === undefined ? {} : { body: JSON.stringify(body), contentType });

/** Asserts a 422 Invalid whose causes include one with this field, reason and message fragment. */
function assertInvalid(res: RawResponse, field: string, reason: string, message: string | RegExp): void {
  assert.equal(res.status, 422, res.text);
  const status = res.json<Status>();
  assert.equal(status.reason, 'Invalid');
  const causes = status.details?.causes ?? [];
  const hit = causes.find((c) => c.field === field && c.reason === reason);
  assert.ok(hit, `no ${reason} cause at ${field} in ${JSON.stringify(causes)}`);
  if (typeof message === 'string') assert.ok(hit.message.includes(message), hit.message);
  else assert.match(hit.message, message);
}

function deployment(
  name: string,
  labels: Record<string, string> = { app: name },
  selector: unknown = { matchLabels: { app: name } },
): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: { selector, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } } },
  };
}

function daemonSet(name: string, spec: Obj = {}): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } },
      ...spec,
    },
  };
}

before(async () => {
  cluster = await startCluster();
  const ns = await send('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  assert.equal(ns.status, 201, ns.text);
});
after(async () => {
  await cluster?.stop();
});

describe('apps/v1 Deployment', () => {
  it('defaults replicas, strategy, history and generation; ignores client status', async () => {
    const body = { ...deployment('web'), status: { replicas: 7 } };
    const res = await send('POST', `${APPS}/deployments`, body);
    assert.equal(res.status, 201, res.text);
    const d = res.json<Obj>();
    assert.equal(d.spec.replicas, 1);
    assert.deepEqual(d.spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' },
    });
    assert.equal(d.spec.revisionHistoryLimit, 10);
    assert.equal(d.spec.progressDeadlineSeconds, 600);
    assert.equal(d.spec.template.spec.restartPolicy, 'Always');
    assert.equal(d.metadata.generation, 1);
    assert.deepEqual(d.status, {});
  });

  it('bumps generation on spec changes only; /status writes keep the spec', async () => {
    const patched = await send(
      'PATCH',
      `${APPS}/deployments/web`,
      { spec: { replicas: 3 } },
      'application/merge-patch+json',
    );
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.json<Obj>().metadata.generation, 2);
    const status = await send(
      'PATCH',
      `${APPS}/deployments/web/status`,
      { spec: { replicas: 9 }, status: { readyReplicas: 2, replicas: 3 } },
      'application/merge-patch+json',
    );
    assert.equal(status.status, 200, status.text);
    const d = status.json<Obj>();
    assert.equal(d.metadata.generation, 2, 'a status write does not bump generation');
    assert.equal(d.spec.replicas, 3, 'spec is ignored on /status');
    assert.equal(d.status.readyReplicas, 2);
    const table = await raw(cluster, 'GET', `${APPS}/deployments/web`, { headers: { accept: TABLE } });
    const t = table.json<Obj>();
    assert.deepEqual(
      t.columnDefinitions.filter((c: Obj) => c.priority === 0).map((c: Obj) => c.name),
      ['Name', 'Ready', 'Up-to-date', 'Available', 'Age'],
    );
    assert.deepEqual(t.rows[0].cells.slice(0, 4), ['web', '2/3', 0, 0]);
  });

  it("rejects a selector that does not match the template labels (422, kube's cause)", async () => {
    const res = await send('POST', `${APPS}/deployments`, deployment('mismatch', { app: 'other' }));
    assertInvalid(
      res,
      'spec.template.metadata.labels',
      'FieldValueInvalid',
      'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`',
    );
  });

  it('rejects a missing selector, an empty one, and a template that is not a valid pod spec', async () => {
    const missing = deployment('nosel');
    delete missing.spec.selector;
    assertInvalid(
      await send('POST', `${APPS}/deployments`, missing),
      'spec.selector',
      'FieldValueRequired',
      'Required value',
    );
    assertInvalid(
      await send('POST', `${APPS}/deployments`, deployment('empty', { app: 'x' }, {})),
      'spec.selector',
      'FieldValueInvalid',
      'Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment',
    );
    const noImage = deployment('noimage');
    noImage.spec.template.spec.containers[0].image = '';
    noImage.spec.template.spec.restartPolicy = 'Never';
    const res = await send('POST', `${APPS}/deployments`, noImage);
    assertInvalid(res, 'spec.template.spec.containers[0].image', 'FieldValueRequired', 'Required value');
    assertInvalid(
      res,
      'spec.template.spec.restartPolicy',
      'FieldValueNotSupported',
      'Unsupported value: "Never": supported values: "Always"',
    );
  });

  it('refuses to change spec.selector (immutable in apps/v1)', async () => {
    const res = await send(
      'PATCH',
      `${APPS}/deployments/web`,
      { spec: { selector: { matchLabels: { app: 'web2' } }, template: { metadata: { labels: { app: 'web2' } } } } },
      'application/merge-patch+json',
    );
    assertInvalid(
      res,
      'spec.selector',
      'FieldValueInvalid',
      'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable',
    );
  });

  it('rejects maxUnavailable and maxSurge both 0', async () => {
    const d = deployment('zero');
    d.spec.strategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 0 } };
    assertInvalid(
      await send('POST', `${APPS}/deployments`, d),
      'spec.strategy.rollingUpdate.maxUnavailable',
      'FieldValueInvalid',
      'may not be 0 when `maxSurge` is 0',
    );
  });
});

describe('apps/v1 DaemonSet', () => {
  it("defaults the update strategy and shows kube's zero status counters", async () => {
    const res = await send('POST', `${APPS}/daemonsets`, daemonSet('agent'));
    assert.equal(res.status, 201, res.text);
    const ds = res.json<Obj>();
    assert.deepEqual(ds.spec.updateStrategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    assert.deepEqual(ds.status, {
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 0,
      numberReady: 0,
    });
    assert.equal(ds.metadata.generation, 1);
    const t = (await raw(cluster, 'GET', `${APPS}/daemonsets`, { headers: { accept: TABLE } })).json<Obj>();
    assert.deepEqual(
      t.columnDefinitions.filter((c: Obj) => c.priority === 0).map((c: Obj) => c.name),
      ['Name', 'Desired', 'Current', 'Ready', 'Up-to-date', 'Available', 'Node Selector', 'Age'],
    );
    assert.deepEqual(t.rows[0].cells.slice(0, 7), ['agent', 0, 0, 0, 0, 0, '<none>']);
  });

  it('rejects an empty selector, and maxSurge with maxUnavailable both non-zero', async () => {
    assertInvalid(
      await send('POST', `${APPS}/daemonsets`, daemonSet('empty', { selector: {} })),
      'spec.selector',
      'FieldValueInvalid',
      'empty selector is invalid for daemonset',
    );
    const both = daemonSet('both', {
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: '10%' } },
    });
    assertInvalid(
      await send('POST', `${APPS}/daemonsets`, both),
      'spec.updateStrategy.rollingUpdate.maxSurge',
      'FieldValueInvalid',
      'may not be set when maxUnavailable is non-zero',
    );
  });
});

describe('rbac.authorization.k8s.io/v1', () => {
  const role = (name: string, rules: unknown[]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace: NS },
    rules,
  });
  const binding = (kind: 'RoleBinding' | 'ClusterRoleBinding', name: string, roleRef: Obj, subjects: Obj[]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: kind === 'RoleBinding' ? { name, namespace: NS } : { name },
    roleRef,
    subjects,
  });

  it('Role: a rule needs verbs, and namespaced rules cannot name non-resource URLs', async () => {
    const noVerbs = await send(
      'POST',
      `${RBAC}/namespaces/${NS}/roles`,
      role('r1', [{ apiGroups: [''], resources: ['pods'] }]),
    );
    assertInvalid(noVerbs, 'rules[0].verbs', 'FieldValueRequired', 'verbs must contain at least one value');
    const urls = await send(
      'POST',
      `${RBAC}/namespaces/${NS}/roles`,
      role('r2', [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }]),
    );
    assertInvalid(
      urls,
      'rules[0].nonResourceURLs',
      'FieldValueInvalid',
      'namespaced rules cannot apply to non-resource URLs',
    );
    const ok = await send(
      'POST',
      `${RBAC}/namespaces/${NS}/roles`,
      role('reader', [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]),
    );
    assert.equal(ok.status, 201, ok.text);
  });

  it('ClusterRole: resource rules need apiGroups and resources', async () => {
    const res = await send('POST', `${RBAC}/clusterroles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'cr' },
      rules: [{ verbs: ['get'] }],
    });
    assertInvalid(res, 'rules[0].apiGroups', 'FieldValueRequired', 'resource rules must supply at least one api group');
    assertInvalid(res, 'rules[0].resources', 'FieldValueRequired', 'resource rules must supply at least one resource');
  });

  it('RoleBinding: roleRef.apiGroup is defaulted, roleRef cannot change, subject kinds are checked', async () => {
    const created = await send(
      'POST',
      `${RBAC}/namespaces/${NS}/rolebindings`,
      binding('RoleBinding', 'rb', { kind: 'Role', name: 'reader' }, [{ kind: 'User', name: 'alice' }]),
    );
    assert.equal(created.status, 201, created.text);
    const rb = created.json<Obj>();
    assert.equal(rb.roleRef.apiGroup, 'rbac.authorization.k8s.io');
    assert.equal(rb.subjects[0].apiGroup, 'rbac.authorization.k8s.io');
    const changed = await send(
      'PATCH',
      `${RBAC}/namespaces/${NS}/rolebindings/rb`,
      { roleRef: { name: 'writer' } },
      'application/merge-patch+json',
    );
    assertInvalid(
      changed,
      'roleRef',
      'FieldValueInvalid',
      'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"writer"}: cannot change roleRef',
    );
    const badSubject = await send(
      'POST',
      `${RBAC}/namespaces/${NS}/rolebindings`,
      binding('RoleBinding', 'rb2', { kind: 'Role', name: 'reader' }, [{ kind: 'Robot', name: 'r2d2' }]),
    );
    assertInvalid(
      badSubject,
      'subjects[0].kind',
      'FieldValueNotSupported',
      'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
    );
    const t = (
      await raw(cluster, 'GET', `${RBAC}/namespaces/${NS}/rolebindings`, { headers: { accept: TABLE } })
    ).json<Obj>();
    assert.deepEqual(t.rows[0].cells.slice(0, 2), ['rb', 'Role/reader']);
  });

  it('ClusterRoleBinding: roleRef must be a ClusterRole; service account subjects need a namespace', async () => {
    const res = await send(
      'POST',
      `${RBAC}/clusterrolebindings`,
      binding('ClusterRoleBinding', 'crb', { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'x' }, [
        { kind: 'ServiceAccount', name: 'sa' },
      ]),
    );
    assertInvalid(
      res,
      'roleRef.kind',
      'FieldValueNotSupported',
      'Unsupported value: "Role": supported values: "ClusterRole"',
    );
    assertInvalid(res, 'subjects[0].namespace', 'FieldValueRequired', 'Required value');
  });
});

describe('core/v1 ServiceAccount', () => {
  it('is served (namespaced, short name sa), validates its name, and prints SECRETS', async () => {
    const bad = await send('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'Not_Valid' },
    });
    assertInvalid(bad, 'metadata.name', 'FieldValueInvalid', 'a lowercase RFC 1123 subdomain');
    const ok = await send('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'builder' },
      secrets: [{ name: 's' }],
    });
    assert.equal(ok.status, 201, ok.text);
    const t = (
      await raw(cluster, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts`, { headers: { accept: TABLE } })
    ).json<Obj>();
    assert.deepEqual(
      t.columnDefinitions.map((c: Obj) => c.name),
      ['Name', 'Secrets', 'Age'],
    );
    assert.deepEqual(t.rows[0].cells.slice(0, 2), ['builder', 1]);
    const core = (await send('GET', '/api/v1')).json<{ resources: Obj[] }>();
    const sa = core.resources.find((r) => r.name === 'serviceaccounts');
    assert.deepEqual([sa?.kind, sa?.namespaced, sa?.shortNames], ['ServiceAccount', true, ['sa']]);
    const apps = (await send('GET', '/apis/apps/v1')).json<{ resources: Obj[] }>();
    assert.deepEqual(apps.resources.map((r) => r.name).sort(), [
      'daemonsets',
      'daemonsets/status',
      'deployments',
      'deployments/status',
    ]);
  });
});
