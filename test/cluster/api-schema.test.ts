// The generated schemas drive pruning, fieldValidation (Strict/Warn/Ignore, unknown and duplicate fields with
// kube-apiserver's messages), the OpenAPI v3 documents kubectl explain reads, and strategic-merge list keys.
// Also checks that regenerating the schema module from the installed client-node, and the resource list from
// the registry modules, changes nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { renderResourceList, renderSchemas, RESOURCES_FILE, SCHEMAS_FILE } from '../../scripts/gen-schemas.ts';
import { discoverResources, sortResources } from '../../scripts/gen-resources.ts';
import { RESOURCES } from '../../src/cluster/registry/registry.ts';
import type { ResourceType } from '../../src/cluster/registry/resource-type.ts';
import { pvcBody, raw } from './api-harness.ts';

const run = promisify(execFile);
let c: TestCluster;
let core: CoreV1Api;
const NS = 'schema';
const PVCS = `/api/v1/namespaces/${NS}/persistentvolumeclaims`;
const typo = (name: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { ...(pvcBody(name).spec as object), storageClasName: 'fast' },
  });

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});
after(() => c.stop());

async function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('kubectl', args, { env: { ...process.env, KUBECONFIG: c.kubeconfigPath } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
const hasKubectl = await run('kubectl', ['version', '--client']).then(
  () => true,
  () => false,
);

describe('generated schemas', () => {
  it('regenerating schemas.generated.ts from the installed client-node changes nothing', () => {
    assert.equal(renderSchemas(), readFileSync(SCHEMAS_FILE, 'utf8'));
  });

  it('regenerating resources.generated.ts from the registry modules changes nothing', () => {
    assert.equal(renderResourceList(), readFileSync(RESOURCES_FILE, 'utf8'));
  });
});

describe('derived resource list', () => {
  const entry = (group: string, resource: string) => ({ rt: { ...RESOURCES[0], group, resource } as ResourceType });
  const names = (es: Array<{ rt: ResourceType }>) => es.map((e) => `${e.rt.group}/${e.rt.resource}`);

  it('places a kind without an order row after its group, and a new group after the known ones', () => {
    const served = RESOURCES.map((rt) => ({ rt }));
    const order = names(
      sortResources([entry('zz.example.com', 'b'), entry('', 'zz-trials'), entry('zy.example.com', 'a'), ...served]),
    );
    const core = served.filter((e) => e.rt.group === '').length;
    assert.equal(order.indexOf('/zz-trials'), core, 'after every core kind, before the first group');
    assert.deepEqual(order.slice(-2), ['zy.example.com/a', 'zz.example.com/b']);
    assert.deepEqual(
      order.filter((n) => !['/zz-trials', 'zy.example.com/a', 'zz.example.com/b'].includes(n)),
      names(served),
    );
  });

  it('refuses a module that exports its entries as an array, or one resource twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-'));
    try {
      const body = `const e = { group: 'x.io', version: 'v1', resource: 'things', kind: 'Thing', listKind: 'ThingList', singular: 'thing', namespaced: true, hasStatus: false, verbs: [], fieldSelectors: {}, validate: () => [] };`;
      // Each case in its own folder: a module, once imported, stays cached under its path.
      const run = async (name: string, exports: string) => {
        const sub = join(dir, name);
        mkdirSync(sub);
        writeFileSync(join(sub, 'things.ts'), `${body}\n${exports}\n`);
        return discoverResources(sub);
      };
      await assert.rejects(
        run('array', 'export const THINGS = [e];'),
        /things\.ts exports THINGS, an array of registry entries/,
      );
      await assert.rejects(
        run('twice', 'export const THING = e;\nexport const SAME = e;'),
        /x\.io\/v1\/things is exported twice/,
      );
      assert.deepEqual(
        (await run('ok', 'export const THING = e;')).map((d) => [d.module, d.name]),
        [['things.ts', 'THING']],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('fieldValidation', () => {
  it('Strict rejects an unknown field with the strict decoding error', async () => {
    const res = await raw(c, 'POST', `${PVCS}?fieldValidation=Strict`, { body: typo('strict') });
    assert.equal(res.status, 400);
    assert.equal(
      res.json<{ message: string }>().message,
      'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: strict decoding error: unknown field "spec.storageClasName"',
    );
    await assert.rejects(core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'strict' }));
  });

  it('Warn (and absent) creates the object without the field and answers a Warning header', async () => {
    for (const [name, q] of [
      ['warn', '?fieldValidation=Warn'],
      ['absent', ''],
    ]) {
      const res = await raw(c, 'POST', `${PVCS}${q}`, { body: typo(name) });
      assert.equal(res.status, 201);
      assert.equal(res.headers.warning, '299 - "unknown field \\"spec.storageClasName\\""');
      const stored = await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name });
      assert.ok(!('storageClasName' in (stored.spec as object)));
    }
  });

  it('Ignore drops the field silently', async () => {
    const res = await raw(c, 'POST', `${PVCS}?fieldValidation=Ignore`, { body: typo('ignore') });
    assert.equal(res.status, 201);
    assert.equal(res.headers.warning, undefined);
    assert.ok(!res.text.includes('storageClasName'));
  });

  it('prunes unknown fields nested in lists and maps of known types', async () => {
    const body = pvcBody('nested', {
      metadata: { name: 'nested', ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'u', bogus: 1 }] },
    });
    const res = await raw(c, 'POST', `${PVCS}?fieldValidation=Strict`, { body: JSON.stringify(body) });
    assert.equal(res.status, 400);
    assert.match(res.json<{ message: string }>().message, /unknown field "metadata\.ownerReferences\[0\]\.bogus"/);
  });

  it('reports duplicate fields: Strict 400, Warn keeps the last value with a warning', async () => {
    const text = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"dup","name":"dup2"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`;
    const strict = await raw(c, 'POST', `${PVCS}?fieldValidation=Strict`, { body: text });
    assert.equal(strict.status, 400);
    assert.match(
      strict.json<{ message: string }>().message,
      /strict decoding error: duplicate field "metadata\.name"$/,
    );
    const warn = await raw(c, 'POST', PVCS, { body: text });
    assert.equal(warn.status, 201);
    assert.equal(warn.headers.warning, '299 - "duplicate field \\"metadata.name\\""');
    assert.equal(warn.json<{ metadata: { name: string } }>().metadata.name, 'dup2');
  });

  it("reports repeated YAML keys as Go's strict YAML decoder does", async () => {
    const yaml =
      'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: ydup\n  name: ydup2\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n';
    const strict = await raw(c, 'POST', `${PVCS}?fieldValidation=Strict`, {
      body: yaml,
      contentType: 'application/yaml',
    });
    assert.equal(strict.status, 400);
    assert.match(
      strict.json<{ message: string }>().message,
      /strict decoding error: yaml: unmarshal errors:\n {2}line 5: key "name" already set in map$/,
    );
    const warn = await raw(c, 'POST', PVCS, { body: yaml, contentType: 'application/yaml' });
    assert.equal(warn.status, 201);
    assert.equal(warn.headers.warning, '299 - "line 5: key \\"name\\" already set in map"');
    assert.equal(warn.json<{ metadata: { name: string } }>().metadata.name, 'ydup2');
  });

  it('applies to patches: Strict 422 on the patch, Warn prunes and warns', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvcBody('patched') as V1PersistentVolumeClaim,
    });
    const strict = await raw(c, 'PATCH', `${PVCS}/patched?fieldValidation=Strict`, {
      body: '{"spec":{"storageClasName":"fast"}}',
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(strict.status, 422);
    assert.equal(
      strict.json<{ message: string }>().message,
      ' "" is invalid: patch: Invalid value: "map[spec:map[storageClasName:fast]]": strict decoding error: unknown field "spec.storageClasName"',
    );
    const warn = await raw(c, 'PATCH', `${PVCS}/patched`, {
      body: '{"metadata":{"labels":{"a":"b"}},"spec":{"storageClasName":"fast"}}',
      contentType: 'application/merge-patch+json',
    });
    assert.equal(warn.status, 200);
    assert.equal(warn.headers.warning, '299 - "unknown field \\"spec.storageClasName\\""');
    assert.ok(!warn.text.includes('storageClasName'));
    assert.equal(warn.json<{ metadata: { labels: Record<string, string> } }>().metadata.labels.a, 'b');
    const op = await raw(c, 'PATCH', `${PVCS}/patched?fieldValidation=Warn`, {
      body: '[{"op":"add","path":"/metadata/labels/c","value":"d","valu":"x"}]',
      contentType: 'application/json-patch+json',
    });
    assert.equal(op.status, 200);
    assert.equal(op.headers.warning, '299 - "json patch unknown field \\"[0].valu\\""');
  });
});

describe('strategic merge patch keys from the schema', () => {
  it('merges status.conditions by type and replaces accessModes', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvcBody('smp') as V1PersistentVolumeClaim,
    });
    const a = await raw(c, 'PATCH', `${PVCS}/smp/status`, {
      body: '{"status":{"conditions":[{"type":"Resizing","status":"True"}]}}',
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(a.status, 200);
    const b = await raw(c, 'PATCH', `${PVCS}/smp/status`, {
      body: '{"status":{"conditions":[{"type":"FileSystemResizePending","status":"True"}]}}',
      contentType: 'application/strategic-merge-patch+json',
    });
    const types = b.json<{ status: { conditions: Array<{ type: string }> } }>().status.conditions.map((x) => x.type);
    assert.deepEqual(types.sort(), ['FileSystemResizePending', 'Resizing']);
  });
});

describe('OpenAPI v3 from the schemas', () => {
  it('describes PersistentVolumeSpec fields with types and descriptions', async () => {
    const paths = (await raw(c, 'GET', '/openapi/v3')).json<{ paths: Record<string, { serverRelativeURL: string }> }>();
    const doc = (await raw(c, 'GET', paths.paths['api/v1'].serverRelativeURL)).json<{
      components: { schemas: Record<string, { properties?: Record<string, Record<string, unknown>> }> };
    }>();
    const spec = doc.components.schemas['io.k8s.api.core.v1.PersistentVolumeSpec'];
    assert.deepEqual(spec.properties!.accessModes.type, 'array');
    assert.match(String(spec.properties!.storageClassName.description), /storageClassName is the name of StorageClass/);
    assert.deepEqual(spec.properties!.capacity.additionalProperties, {
      $ref: '#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity',
    });
    const meta = doc.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'];
    assert.equal(meta.properties!.ownerReferences['x-kubernetes-patch-merge-key'], 'uid');
  });

  it(
    'kubectl explain pv.spec, pvc.spec.resources and storageclass',
    { skip: hasKubectl ? false : 'kubectl is not installed' },
    async () => {
      const pv = await kubectl('explain', 'pv.spec');
      assert.equal(pv.code, 0, pv.stderr);
      assert.match(pv.stdout, /FIELD: spec <PersistentVolumeSpec>/);
      assert.match(pv.stdout, /capacity\s+<map\[string\]Quantity>/);
      assert.match(pv.stdout, /hostPath\s+<HostPathVolumeSource>\n\s+hostPath represents a directory on the host/);
      const res = await kubectl('explain', 'pvc.spec.resources');
      assert.match(res.stdout, /FIELD: resources <VolumeResourceRequirements>/);
      assert.match(res.stdout, /requests\s+<map\[string\]Quantity>/);
      const sc = await kubectl('explain', 'storageclass');
      assert.match(sc.stdout, /GROUP:\s+storage\.k8s\.io/);
      assert.match(sc.stdout, /volumeBindingMode\s+<string>/);
    },
  );

  it(
    'kubectl apply with a misspelt field fails under its default Strict validation',
    { skip: hasKubectl ? false : 'kubectl is not installed' },
    async () => {
      const manifest = `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: kubectl-typo, namespace: ${NS}}\nspec:\n  storageClasName: fast\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n`;
      const { writeFile, mkdtemp, rm } = await import('node:fs/promises');
      const { tmpdir } = await import('node:os');
      const dir = await mkdtemp(`${tmpdir()}/schema-`);
      try {
        await writeFile(`${dir}/pvc.yaml`, manifest);
        const strict = await kubectl('apply', '-f', `${dir}/pvc.yaml`);
        assert.notEqual(strict.code, 0);
        assert.match(strict.stderr, /strict decoding error: unknown field "spec.storageClasName"/);
        const warn = await kubectl('apply', '-f', `${dir}/pvc.yaml`, '--validate=warn');
        assert.equal(warn.code, 0, warn.stderr);
        assert.match(warn.stderr, /Warning: unknown field "spec.storageClasName"/);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
