// The checks migrate-local and safety-hostpath added to provisioning run in planHostPathClaim, so the checkClaim
// hook (what `explain` runs) reports them exactly as provision() refuses: a deployment-mode instance refusing
// another node's claim, local-path's volumeType annotations, nfs publishing of an exported shared path, a
// pathPattern that cannot render. Pure: no directory is created.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { planHostPathClaim } from '../../src/hostpath/provision/claim-check.ts';
import { validateHostPathConfig, DEFAULT_NODE } from '../../src/hostpath/config/hostpath-config.ts';
import { InfeasibleError, IgnoredError } from '../../src/controller/provisioner.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';

test('checkClaim and provision() agree on the migrate-local rules; explain sees them without touching the disk', async () => {
  const dir = await tempTree('kp-claim-check-');
  try {
    await fsp.mkdir(path.join(dir, 'local'));
    await fsp.mkdir(path.join(dir, 'shared'));
    const config = validateHostPathConfig({
      storageClassConfigs: {
        local: { nodePathMap: [{ node: DEFAULT_NODE, paths: [path.join(dir, 'local')] }] },
        nfs: { sharedFileSystemPath: path.join(dir, 'shared'), nfs: { server: '10.0.0.5', path: '/e' } },
      },
    });
    const p = new HostPathProvisioner({ config, nodeName: 'n1' });
    const check = (o: ReturnType<typeof provisionOptions>) => p.checkClaim(o);
    const cases: Array<{
      name: string;
      o: ReturnType<typeof provisionOptions>;
      kind: 'infeasible' | 'ignored';
      match: RegExp;
    }> = [
      {
        name: 'another node in deployment mode',
        o: provisionOptions(claim({ node: 'n2' }), storageClass('local')),
        kind: 'infeasible',
        match: /scheduled to node n2.*--other-node-claims=ignore/,
      },
      {
        name: 'a bad volumeType annotation',
        o: provisionOptions(claim({ node: 'n1', annotations: { volumeType: 'nfs' } }), storageClass('local')),
        kind: 'infeasible',
        match: /volumeType annotation "nfs" is not one of local, hostPath/,
      },
      {
        name: 'a pattern naming a missing annotation',
        o: provisionOptions(
          claim({ node: 'n1' }),
          storageClass('local', { pathPattern: '${.PVC.annotations.dir}/${.PV.name}' }),
        ),
        kind: 'infeasible',
        match: /dir/,
      },
    ];
    for (const c of cases) {
      const verdict = check(c.o);
      assert.ok(
        !verdict.ok && verdict.kind === c.kind && c.match.test(verdict.message),
        `${c.name}: ${JSON.stringify(verdict)}`,
      );
      await assert.rejects(
        p.provision(c.o, signal()),
        (e: unknown) => e instanceof InfeasibleError && c.match.test(e.message),
        c.name,
      );
    }
    const ignoring = new HostPathProvisioner({ config, nodeName: 'n1', otherNodeClaims: 'ignore' });
    const other = provisionOptions(claim({ node: 'n2' }), storageClass('local'));
    assert.equal((ignoring.checkClaim(other) as { kind?: string }).kind, 'ignored');
    await assert.rejects(ignoring.provision(other, signal()), IgnoredError);
    assert.deepEqual(await snapshot(dir), ['local', 'shared'], 'nothing created by any refusal');
    // A shared path that is an NFS export: the plan publishes nfs, with nfs-subdir's directory name.
    const o = provisionOptions(claim({ name: 'data', namespace: 'ns' }), storageClass('nfs'));
    const plan = planHostPathClaim({ ...o, config, mode: 'deployment', nodeName: 'n1' });
    assert.ok(plan.ok);
    assert.equal(plan.plan.volumeType, 'nfs');
    assert.equal(plan.plan.relativePath, `ns-data-${o.pvName}`);
    const { volume } = await p.provision(o, signal());
    assert.deepEqual(volume.spec.nfs, { server: '10.0.0.5', path: `/e/ns-data-${o.pvName}` });
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
});
