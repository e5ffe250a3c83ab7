// The conformance suite of kube-provisioner/testing run against the two provisioners in this repository: the
// hostpath provisioner (daemonset mode, node-local paths) and examples/directory-provisioner. Each case gets a
// fresh provisioner on a fresh temp directory.
import { access, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { provisionerConformance, type ConformanceSubject } from 'kube-provisioner/testing';
import { HostPathProvisioner, validateHostPathConfig } from 'kube-provisioner/hostpath';
import type { StorageClass } from 'kube-provisioner';
import { DirectoryProvisioner } from '../../examples/directory-provisioner/provisioner.ts';

const NODE = 'node-a';
const dirs = new WeakMap<ConformanceSubject, string>();

function storageClass(provisioner: string): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'conformance' },
    provisioner,
    reclaimPolicy: 'Retain',
    volumeBindingMode: 'WaitForFirstConsumer',
  };
}

const present = async (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

provisionerConformance({
  name: 'conformance: hostpath provisioner (daemonset, node-local paths)',
  async make() {
    const dir = await mkdtemp(join(tmpdir(), 'kp-conformance-hostpath-'));
    await mkdir(join(dir, 'disk'));
    const config = validateHostPathConfig({ nodePathMap: [{ node: NODE, paths: [join(dir, 'disk')] }] });
    const subject: ConformanceSubject = {
      provisioner: new HostPathProvisioner({ config, mode: 'daemonset', nodeName: NODE }),
      storageClass: storageClass('kube-provisioner.io/hostpath'),
      options: {
        selectedNodeName: NODE,
        selectedNode: { metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } },
      },
      // The default path pattern starts with the PV name.
      exists: async (pv) => (await readdir(join(dir, 'disk'))).some((e) => e.startsWith(`${pv.metadata.name ?? '?'}_`)),
    };
    dirs.set(subject, dir);
    return subject;
  },
  ignored: (_s, o) => ({ ...o, selectedNodeName: 'node-b', selectedNode: { metadata: { name: 'node-b' } } }),
  infeasible: (_s, o) => ({ ...o, claim: { ...o.claim, spec: { ...o.claim.spec, volumeMode: 'Block' } } }),
  cleanup: async (s) => rm(dirs.get(s) ?? '/nonexistent', { recursive: true, force: true }),
});

provisionerConformance({
  name: 'conformance: examples/directory-provisioner',
  async make() {
    const dir = await mkdtemp(join(tmpdir(), 'kp-conformance-directory-'));
    const subject: ConformanceSubject = {
      provisioner: new DirectoryProvisioner({ baseDir: dir, nodeName: NODE }),
      storageClass: storageClass('directory.example.com/local'),
      exists: (pv) => present(join(dir, pv.metadata.name ?? '?')),
    };
    dirs.set(subject, dir);
    return subject;
  },
  ignored: (_s, o) => ({ ...o, selectedNodeName: 'node-b' }),
  infeasible: (_s, o) => ({
    ...o,
    claim: { ...o.claim, spec: { ...o.claim.spec, resources: { requests: { storage: '1Ti' } } } },
  }),
  cleanup: async (s) => rm(dirs.get(s) ?? '/nonexistent', { recursive: true, force: true }),
});
