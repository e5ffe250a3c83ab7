// Registry entries for the kinds deploy/ uses beyond storage: core/v1 ServiceAccount and the apps/v1 Deployment
// and DaemonSet (the rbac.authorization.k8s.io/v1 group is one file, rbac.ts, listed here first). The embedded
// cluster stores and validates them (so manifests can be applied and checked as on a real cluster); no
// controller acts on them: a Deployment creates no pods and RBAC authorizes nothing.
import type { KubeObject } from '../../types/k8s.ts';
import { jsonEqual } from '../common/meta.ts';
import { ALL_VERBS, defaultPodSpec, section, setDefault } from './registry-helpers.ts';
import type { ResourceType } from './resource-type.ts';
import { validateDaemonSet, validateDeployment } from './validation-apps.ts';
import { RBAC_RESOURCES } from './rbac.ts';
import { daemonSetColumns, deploymentColumns } from './tables-apps-rbac.ts';

/** The pod template's PodSpec gets the Pod defaults (restartPolicy Always...), as SetDefaults_PodSpec does. */
function defaultTemplate(spec: Record<string, unknown>): void {
  defaultPodSpec(section(section(spec, 'template'), 'spec'));
}

/** SetDefaults_Deployment (apps/v1). */
function defaultDeployment(o: KubeObject): void {
  const spec = section(o, 'spec');
  if (spec.replicas === undefined || spec.replicas === null) spec.replicas = 1;
  const strategy = section(spec, 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rollingUpdate = section(strategy, 'rollingUpdate');
    setDefault(rollingUpdate, 'maxUnavailable', '25%');
    setDefault(rollingUpdate, 'maxSurge', '25%');
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  setDefault(spec, 'progressDeadlineSeconds', 600);
  defaultTemplate(spec);
}

/** DaemonSetStatus fields without omitempty: kube always shows them, as 0 on a fresh object. */
const DAEMONSET_STATUS_ZEROES = ['currentNumberScheduled', 'numberMisscheduled', 'desiredNumberScheduled', 'numberReady'];

/** SetDefaults_DaemonSet (apps/v1). */
function defaultDaemonSet(o: KubeObject): void {
  const spec = section(o, 'spec');
  const strategy = section(spec, 'updateStrategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rollingUpdate = section(strategy, 'rollingUpdate');
    setDefault(rollingUpdate, 'maxUnavailable', 1);
    setDefault(rollingUpdate, 'maxSurge', 0);
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  defaultTemplate(spec);
  const status = section(o, 'status');
  for (const f of DAEMONSET_STATUS_ZEROES) setDefault(status, f, 0);
}

const nonEmpty = (m: unknown) => (m && typeof m === 'object' && Object.keys(m).length > 0 ? m : undefined);

/**
 * Generation bookkeeping of the apps strategies: 1 at create; +1 when the spec changes (a Deployment also
 * counts annotation changes, which it copies to its ReplicaSets). Status writes never bump it.
 */
function bumpGeneration(countAnnotations: boolean, applyDefaults: (o: KubeObject) => void) {
  return (o: KubeObject, old: KubeObject, subresource: 'status' | undefined): void => {
    if (subresource === 'status') return;
    applyDefaults(o); // compare defaulted specs, as kube does after decoding
    const changed =
      !jsonEqual(o.spec, old.spec) || (countAnnotations && !jsonEqual(nonEmpty(o.metadata.annotations), nonEmpty(old.metadata.annotations)));
    if (changed) o.metadata.generation = (old.metadata.generation ?? 0) + 1;
  };
}

const apps = {
  group: 'apps',
  version: 'v1',
  namespaced: true,
  verbs: ALL_VERBS,
  categories: ['all'],
  hasStatus: true,
  fieldSelectors: {},
  returnDeletedObject: true,
} as const satisfies Partial<ResourceType>;

const deployments: ResourceType = {
  ...apps,
  resource: 'deployments',
  kind: 'Deployment',
  listKind: 'DeploymentList',
  shortNames: ['deploy'],
  singular: 'deployment',
  verbs: [...ALL_VERBS],
  categories: ['all'],
  validate: (o, old) => validateDeployment(o, old),
  defaults: defaultDeployment,
  prepareForCreate(o) {
    o.status = {};
    o.metadata.generation = 1;
  },
  prepareForUpdate: bumpGeneration(true, defaultDeployment),
  columns: deploymentColumns,
};

const daemonSets: ResourceType = {
  ...apps,
  resource: 'daemonsets',
  kind: 'DaemonSet',
  listKind: 'DaemonSetList',
  shortNames: ['ds'],
  singular: 'daemonset',
  verbs: [...ALL_VERBS],
  categories: ['all'],
  validate: (o, old) => validateDaemonSet(o, old),
  defaults: defaultDaemonSet,
  prepareForCreate(o) {
    o.status = {};
    o.metadata.generation = 1;
  },
  prepareForUpdate: bumpGeneration(false, defaultDaemonSet),
  columns: daemonSetColumns,
};

/** Served after the storage kinds, in discovery order: rbac.authorization.k8s.io/v1, then apps/v1. */
export const APPS_RBAC_RESOURCES: readonly ResourceType[] = [...RBAC_RESOURCES, deployments, daemonSets];
