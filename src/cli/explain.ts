// `kube-provisioner explain pvc NS/NAME`: why a claim is (or is not) being provisioned, from the same
// decideClaim the controller runs and, given the provisioner's configuration (--config or --config-map, as
// `run hostpath` takes it), the hostpath provisioner's own checks, on objects fetched once (no controller
// needed). Exit 0 with the explanation; 1 when the claim does not exist or the cluster cannot be reached.
import { Command, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { explainClaim, formatExplanation, type ClaimExplanation } from '../controller/explain.ts';
import { parseHostPathConfig, type HostPathConfig } from '../hostpath/config.ts';
import { HostPathProvisioner } from '../hostpath/provisioner.ts';
import type { Provisioner } from '../controller/provisioner.ts';
import { KubeClient } from '../runtime/client.ts';
import { configMaps } from '../runtime/resources.ts';
import type { KubeObject } from '../types/k8s.ts';
import { loadCliKubeConfig } from './user-errors.ts';
import { addConnectionOptions, CliOptionError, DEFAULT_CONFIG_KEY, DEFAULT_PROVISIONER_NAME, parseConfigMapRef } from './options.ts';
import { userAgent } from './version.ts';

export interface ExplainOptions {
  kubeconfig?: string;
  context?: string;
  /** Explain for this provisioner (default: the one the claim was handed to, else its class's). */
  provisionerName?: string;
  output: 'text' | 'json';
  kubeApiTimeout?: number;
  /** The hostpath configuration file the provisioner runs with. */
  config?: string;
  /** Or its ConfigMap, `namespace/name`. */
  configMap?: string;
  configKey?: string;
}

/** The configuration the provisioner would use, from --config or --config-map (undefined: neither given). */
async function loadConfig(o: ExplainOptions, client: KubeClient): Promise<HostPathConfig | undefined> {
  if (o.config && o.configMap) throw new CliOptionError('--config', 'give either --config or --config-map, not both');
  if (o.config) return parseHostPathConfig(await readFile(o.config, 'utf8'), o.config);
  if (!o.configMap) return undefined;
  const ref = parseConfigMapRef(o.configMap, o.configKey ?? DEFAULT_CONFIG_KEY);
  const cm = await client.get<KubeObject & { data?: Record<string, string> }>(configMaps, ref.name, { namespace: ref.namespace });
  const text = cm.data?.[ref.key];
  if (text === undefined) throw new CliOptionError('--config-map', `ConfigMap ${ref.namespace}/${ref.name} has no key ${ref.key}`);
  return parseHostPathConfig(text, `${ref.namespace}/${ref.name}:${ref.key}`);
}

/** `ns/name`, or `name` in `defaultNamespace`. */
export function parseClaimRef(ref: string, defaultNamespace = 'default'): { namespace: string; name: string } {
  const parts = ref.split('/');
  if (parts.length > 2 || parts.some((p) => !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(p))) {
    throw new CliOptionError('pvc', `"${ref}" is not NAMESPACE/NAME`);
  }
  return parts.length === 2 ? { namespace: parts[0], name: parts[1] } : { namespace: defaultNamespace, name: parts[0] };
}

/** Fetches and explains; returns the text to print. */
export async function explainPvc(ref: { namespace: string; name: string }, o: ExplainOptions): Promise<{ explanation: ClaimExplanation; text: string }> {
  const { kubeConfig } = loadCliKubeConfig({ path: o.kubeconfig, context: o.context });
  const client = new KubeClient({ kubeConfig, userAgent: userAgent('explain'), timeoutMs: o.kubeApiTimeout, maxRetries: 1 });
  try {
    const config = await loadConfig(o, client);
    // The same checks provision() runs, as the instance that serves the claim's node would run them (a node-local
    // instance, or a deployment-mode one on that node): explain does not know where instances run, so another
    // node's claim is not reported as refused for that reason. Without a node: a deployment-mode instance.
    const provisioner: Pick<Provisioner, 'checkClaim'> | undefined = config
      ? {
        checkClaim: (input) => new HostPathProvisioner(input.selectedNodeName
          ? { config, mode: 'daemonset', nodeName: input.selectedNodeName }
          : { config }).checkClaim(input),
      }
      : undefined;
    const explanation = await explainClaim(client, ref.namespace, ref.name, { provisionerName: o.provisionerName, defaultProvisionerName: DEFAULT_PROVISIONER_NAME, provisioner });
    const text = o.output === 'json' ? JSON.stringify(explanation, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) : formatExplanation(explanation);
    return { explanation, text };
  } finally {
    client.close();
  }
}

/** Registers `explain pvc`. */
export function registerExplainCommand(program: Command): void {
  const explain = program.command('explain').description('explain what the provisioning controller decides for an object, and why');
  const pvc = new Command('pvc')
    .description('why a PersistentVolumeClaim is (or is not) being provisioned')
    .argument('<namespace/name>', 'the claim (a bare name means namespace "default")')
    .addOption(new Option('--provisioner-name <name>', 'explain for this provisioner (default: the claim\'s, else its class\'s)'))
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .addOption(new Option('--config <file>', 'the hostpath configuration the provisioner runs with: run its own checks too'))
    .addOption(new Option('--config-map <namespace/name>', 'the same, from its ConfigMap'))
    .addOption(new Option('--config-key <key>', 'the ConfigMap key').default(DEFAULT_CONFIG_KEY));
  addConnectionOptions(pvc);
  pvc.action(async (ref: string, flags: ExplainOptions) => {
    const { text } = await explainPvc(parseClaimRef(ref), flags);
    process.stdout.write(`${text}\n`);
  });
  explain.addCommand(pvc);
}
