// Table printers of the kinds deploy/ uses beyond storage (k/k pkg/printers/internalversion/printers.go 1.32):
// ServiceAccount, Deployment and DaemonSet. The rbac kinds carry their columns on their entries (rbac.ts).
import type { KubeObject } from '../../types/k8s.ts';
import { ageColumn, column, nameColumn, rec, spec, status, str, type TableColumn } from './table-columns.ts';

/** labels.Selector.String() of a metav1.LabelSelector: requirements sorted by key, `<none>` when empty. */
export function labelSelectorString(sel: unknown): string {
  const s = rec(sel);
  const reqs: Array<[string, string]> = Object.entries(rec(s.matchLabels)).map(([k, v]) => [k, `${k}=${str(v)}`]);
  for (const e of (Array.isArray(s.matchExpressions) ? s.matchExpressions : []).map(rec)) {
    const key = str(e.key);
    const values = `(${(Array.isArray(e.values) ? e.values.map((v) => str(v)) : []).sort().join(',')})`;
    const text = { In: `${key} in ${values}`, NotIn: `${key} notin ${values}`, Exists: key, DoesNotExist: `!${key}` }[str(e.operator)];
    if (text !== undefined) reqs.push([key, text]);
  }
  const out = reqs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, t]) => t).join(',');
  return out === '' ? '<none>' : out;
}

function templateContainers(o: KubeObject): Array<Record<string, unknown>> {
  const list = rec(rec(spec(o).template).spec).containers;
  return Array.isArray(list) ? list.map(rec) : [];
}
const num = (v: unknown) => (typeof v === 'number' ? v : 0);
const workloadWideColumns: TableColumn[] = [
  column('Containers', 'Names of each container in the template.', (o) => templateContainers(o).map((c) => str(c.name)).join(','), 1),
  column('Images', 'Images referenced by each container in the template.', (o) => templateContainers(o).map((c) => str(c.image)).join(','), 1),
];

export const deploymentColumns: TableColumn[] = [
  nameColumn,
  column('Ready', 'Number of the pod with ready state', (o) => `${num(status(o).readyReplicas)}/${num(spec(o).replicas)}`),
  column('Up-to-date', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.', (o) => num(status(o).updatedReplicas)),
  column('Available', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.', (o) => num(status(o).availableReplicas)),
  ageColumn,
  ...workloadWideColumns,
  column('Selector', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', (o) =>
    (spec(o).selector ? labelSelectorString(spec(o).selector).replace(/^<none>$/, '') : ''), 1),
];

export const daemonSetColumns: TableColumn[] = [
  nameColumn,
  column('Desired', 'The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).', (o) => num(status(o).desiredNumberScheduled), 0, 'integer'),
  column('Current', 'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.', (o) => num(status(o).currentNumberScheduled), 0, 'integer'),
  column('Ready', 'numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.', (o) => num(status(o).numberReady), 0, 'integer'),
  column('Up-to-date', 'The total number of nodes that are running updated daemon pod', (o) => num(status(o).updatedNumberScheduled), 0, 'integer'),
  column('Available', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)', (o) => num(status(o).numberAvailable), 0, 'integer'),
  column('Node Selector', 'NodeSelector is a selector which must be true for the pod to fit on a node.', (o) => {
    const selector = rec(rec(rec(spec(o).template).spec).nodeSelector);
    const text = Object.keys(selector).sort().map((k) => `${k}=${str(selector[k])}`).join(',');
    return text === '' ? '<none>' : text;
  }),
  ageColumn,
  ...workloadWideColumns,
  column('Selector', 'A label query over pods that are managed by the daemon set.', (o) => labelSelectorString(spec(o).selector), 1),
];
