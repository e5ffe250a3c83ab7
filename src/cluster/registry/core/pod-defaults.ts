// The defaulting of pod specs, the one source for Pods and every pod template (Deployment, DaemonSet), as
// kube-apiserver 1.32 applies it on decode (k/k pkg/apis/core/v1/defaults.go and the generated
// zz_generated.defaults.go that walks a PodSpec, plus the `+default` markers of k8s.io/api core/v1 types.go):
// SetDefaults_PodSpec, SetDefaults_Container (image pull policy by tag, termination message), ports' protocol,
// env fieldRefs, probes and their handlers, resource lists rounded up to milli units, the volume sources'
// defaults, and SetDefaults_Pod for Pods only. Also the two things Go's JSON encoding shows that defaulting
// does not: a container's `resources: {}` (a struct, never omitted) and a template's `creationTimestamp: null`.
// Written from the rules, never copied.
import type { KubeObject } from '../../../types/k8s.ts';
import { canonicalizeQuantities } from '../quantity-canonical.ts';
import { section, setDefault } from '../registry-fields.ts';

type Json = Record<string, unknown>;

const rec = (v: unknown): Json | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
const records = (v: unknown): Json[] => (Array.isArray(v) ? v.map(rec).filter((x): x is Json => x !== undefined) : []);
/** Sets a pointer field (`*int32`, `*string`) that is absent or null; "" and 0 are values. */
const setUnset = (obj: Json, key: string, value: unknown): void => {
  if (obj[key] === undefined || obj[key] === null) obj[key] = value;
};
/** Sets an int32 field written with omitempty: absent, null and 0 all read as unset. */
const setZero = (obj: Json, key: string, value: number): void => {
  if (obj[key] === undefined || obj[key] === null || obj[key] === 0) obj[key] = value;
};

/** v1.SecretVolumeSourceDefaultMode and its siblings: 0644. */
const DEFAULT_MODE = 0o644;
const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

// ------------------------------------------------------------------------------------------ images

// The docker reference grammar (github.com/distribution/reference), as ParseNormalizedNamed checks it.
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const NAME_RE = new RegExp(`^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`);
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const DIGEST_RE = /^(sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})$/;
const IDENTIFIER_RE = /^[a-f0-9]{64}$/;
const NAME_TOTAL_LENGTH_MAX = 255;

/**
 * The tag parsers.ParseImageName finds: the explicit tag, `latest` when neither tag nor digest is given, "" for
 * a digest alone or a reference that does not parse.
 */
export function imageTag(image: string): string {
  const at = image.indexOf('@');
  const named = at < 0 ? image : image.slice(0, at);
  if (at >= 0 && !DIGEST_RE.test(image.slice(at + 1))) return '';
  const colon = named.lastIndexOf(':');
  const hasTag = colon > named.lastIndexOf('/');
  const name = hasTag ? named.slice(0, colon) : named;
  const tag = hasTag ? named.slice(colon + 1) : '';
  if (hasTag && !TAG_RE.test(tag)) return '';
  if (IDENTIFIER_RE.test(name) || name.length > NAME_TOTAL_LENGTH_MAX || !NAME_RE.test(name)) return '';
  // Without a domain the first component is a path (docker.io/library/...), which must be lower case.
  const slash = name.indexOf('/');
  const first = slash < 0 ? name : name.slice(0, slash);
  const hasDomain = slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first);
  const remote = hasDomain ? name.slice(slash + 1) : name;
  if (remote.toLowerCase() !== remote) return '';
  if (tag === '' && at < 0) return 'latest';
  return tag;
}

/** SetDefaults_Container's imagePullPolicy: Always for `:latest` or no tag, IfNotPresent otherwise. */
export function defaultPullPolicy(image: unknown): 'Always' | 'IfNotPresent' {
  return typeof image === 'string' && imageTag(image) === 'latest' ? 'Always' : 'IfNotPresent';
}

// ------------------------------------------------------------------------------------------ containers

function defaultHttpGet(handler: Json | undefined): void {
  const http = rec(handler?.httpGet);
  if (!http) return;
  setDefault(http, 'path', '/');
  setDefault(http, 'scheme', 'HTTP');
}

function defaultProbe(probe: Json | undefined): void {
  if (!probe) return;
  setZero(probe, 'timeoutSeconds', 1);
  setZero(probe, 'periodSeconds', 10);
  setZero(probe, 'successThreshold', 1);
  setZero(probe, 'failureThreshold', 3);
  defaultHttpGet(probe);
  const grpc = rec(probe.grpc);
  if (grpc) setUnset(grpc, 'service', '');
}

function defaultFieldRef(holder: Json | undefined): void {
  const ref = rec(holder?.fieldRef);
  if (ref) setDefault(ref, 'apiVersion', 'v1');
}

/** SetDefaults_Container plus what the generated defaulter does for its ports, env, resources, probes, hooks. */
function defaultContainer(c: Json): void {
  if (!c.imagePullPolicy) c.imagePullPolicy = defaultPullPolicy(c.image);
  setDefault(c, 'terminationMessagePath', '/dev/termination-log');
  setDefault(c, 'terminationMessagePolicy', 'File');
  for (const port of records(c.ports)) setDefault(port, 'protocol', 'TCP');
  for (const env of records(c.env)) defaultFieldRef(rec(env.valueFrom));
  const resources = section(c, 'resources');
  canonicalizeQuantities(resources.limits, 'milli');
  canonicalizeQuantities(resources.requests, 'milli');
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) defaultProbe(rec(c[probe]));
  const lifecycle = rec(c.lifecycle);
  for (const hook of ['postStart', 'preStop']) defaultHttpGet(rec(lifecycle?.[hook]));
}

// ------------------------------------------------------------------------------------------ volumes

function defaultDownwardApi(source: Json | undefined): void {
  for (const item of records(source?.items)) defaultFieldRef(item);
}

/** SetDefaults_Volume and the defaults of each volume source. */
function defaultVolume(v: Json): void {
  if (!Object.keys(v).some((k) => k !== 'name' && v[k] !== null && v[k] !== undefined)) v.emptyDir = {};
  const hostPath = rec(v.hostPath);
  if (hostPath) setUnset(hostPath, 'type', '');
  for (const key of ['secret', 'configMap']) {
    const source = rec(v[key]);
    if (source) setUnset(source, 'defaultMode', DEFAULT_MODE);
  }
  const downwardAPI = rec(v.downwardAPI);
  if (downwardAPI) {
    setUnset(downwardAPI, 'defaultMode', DEFAULT_MODE);
    defaultDownwardApi(downwardAPI);
  }
  const projected = rec(v.projected);
  if (projected) {
    setUnset(projected, 'defaultMode', DEFAULT_MODE);
    for (const source of records(projected.sources)) {
      defaultDownwardApi(rec(source.downwardAPI));
      const token = rec(source.serviceAccountToken);
      if (token) setUnset(token, 'expirationSeconds', 3600);
    }
  }
  const iscsi = rec(v.iscsi);
  if (iscsi) setDefault(iscsi, 'iscsiInterface', 'default');
  const rbd = rec(v.rbd);
  if (rbd) {
    setDefault(rbd, 'pool', 'rbd');
    setDefault(rbd, 'user', 'admin');
    setDefault(rbd, 'keyring', '/etc/ceph/keyring');
  }
  const azureDisk = rec(v.azureDisk);
  if (azureDisk) {
    setUnset(azureDisk, 'cachingMode', 'ReadWrite');
    setUnset(azureDisk, 'fsType', 'ext4');
    setUnset(azureDisk, 'readOnly', false);
    setUnset(azureDisk, 'kind', 'Shared');
  }
  const scaleIO = rec(v.scaleIO);
  if (scaleIO) {
    setDefault(scaleIO, 'storageMode', 'ThinProvisioned');
    setDefault(scaleIO, 'fsType', 'xfs');
  }
  const claimTemplate = rec(rec(v.ephemeral)?.volumeClaimTemplate);
  if (claimTemplate) {
    setUnset(section(claimTemplate, 'metadata'), 'creationTimestamp', null);
    const spec = section(claimTemplate, 'spec');
    setUnset(spec, 'volumeMode', 'Filesystem');
    const resources = rec(spec.resources);
    canonicalizeQuantities(resources?.limits, 'milli');
    canonicalizeQuantities(resources?.requests, 'milli');
  }
}

// ------------------------------------------------------------------------------------------ specs

/** SetDefaults_PodSpec and everything under it, for a Pod's spec and a template's alike. */
export function defaultPodSpec(spec: Json): void {
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'restartPolicy', 'Always');
  setUnset(spec, 'securityContext', {});
  setUnset(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'schedulerName', 'default-scheduler');
  // v1 conversion: the deprecated serviceAccount names the account when serviceAccountName does not, and
  // always reads back as serviceAccountName.
  if (!spec.serviceAccountName && typeof spec.serviceAccount === 'string' && spec.serviceAccount)
    spec.serviceAccountName = spec.serviceAccount;
  if (typeof spec.serviceAccountName === 'string' && spec.serviceAccountName)
    spec.serviceAccount = spec.serviceAccountName;
  for (const v of records(spec.volumes)) defaultVolume(v);
  for (const list of CONTAINER_LISTS) for (const c of records(spec[list])) defaultContainer(c);
  canonicalizeQuantities(spec.overhead, 'milli');
  const resources = rec(spec.resources);
  canonicalizeQuantities(resources?.limits, 'milli');
  canonicalizeQuantities(resources?.requests, 'milli');
}

/** SetDefaults_Pod (requests from limits, service links, host ports on the host network), then the spec's. */
export function defaultPod(o: KubeObject): void {
  const spec = section(o, 'spec');
  for (const list of ['initContainers', 'containers'] as const) {
    for (const c of records(spec[list])) {
      const resources = rec(c.resources);
      const limits = rec(resources?.limits);
      if (!resources || !limits) continue;
      const requests = section(resources, 'requests');
      for (const [k, v] of Object.entries(limits)) if (!(k in requests)) requests[k] = v;
    }
  }
  setUnset(spec, 'enableServiceLinks', true);
  if (spec.hostNetwork === true) {
    for (const list of ['initContainers', 'containers'] as const) {
      for (const c of records(spec[list])) {
        for (const port of records(c.ports))
          if (typeof port.containerPort === 'number' && port.containerPort !== 0)
            setZero(port, 'hostPort', port.containerPort);
      }
    }
  }
  defaultPodSpec(spec);
}

/** A PodTemplateSpec: its spec's defaults, and the null creationTimestamp Go writes for its ObjectMeta. */
export function defaultPodTemplate(template: Json): void {
  setUnset(section(template, 'metadata'), 'creationTimestamp', null);
  defaultPodSpec(section(template, 'spec'));
}
