// `kube-provisioner explain pvc NS/NAME`: why a claim is (or is not) being provisioned, from the same
// decideClaim the controller runs and the hostpath provisioner's own checks, on objects fetched once (no controller
// needed). The configuration for those checks is --config or --config-map (as `run hostpath` takes it), else the
// one a running hostpath controller of the claim's provisioner names in its heartbeat Lease (its file, as in `dev`,
// or its ConfigMap). Exit 0 with the explanation; 1 when the claim does not exist or the cluster cannot be reached.
import { Command, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { explainClaim, formatExplanation, type ClaimExplanation } from '../controller/claim/explain-claim.ts';
import { judgePresence, readControllerPresence } from '../controller/presence/explain-presence.ts';
import { claimClassName, claimProvisionerName } from '../controller/claim/decide-claim.ts';
import { parseHostPathConfig, type HostPathConfig } from '../hostpath/config/hostpath-config.ts';
import { HostPathProvisioner } from '../hostpath/hostpath-provisioner.ts';
import type { Provisioner } from '../controller/provisioner.ts';
import { KubeClient } from '../runtime/client.ts';
import { NotFoundError } from '../runtime/errors.ts';
import { configMaps, persistentVolumeClaims, storageClasses } from '../runtime/resources.ts';
import type { KubeObject, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { loadCliKubeConfig } from './user-errors.ts';
import { addConnectionOptions, CliOptionError } from './flags.ts';
import {
  DEFAULT_CONFIG_KEY,
  DEFAULT_PROVISIONER_NAME,
  HOSTPATH_CONFIG_DETAIL,
  parseConfigMapRef,
  type HostPathConfigLocation,
} from './hostpath-options.ts';
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

/** A configuration and where it came from, for the facts. */
interface FoundConfig {
  config?: HostPathConfig;
  /** Where it was read, or why none was. */
  source: string;
}

async function readConfigMap(
  client: KubeClient,
  ref: { namespace: string; name: string; key: string },
  option: string,
): Promise<HostPathConfig> {
  const cm = await client.get<KubeObject & { data?: Record<string, string> }>(configMaps, ref.name, {
    namespace: ref.namespace,
  });
  const text = cm.data?.[ref.key];
  if (text === undefined)
    throw new CliOptionError(option, `ConfigMap ${ref.namespace}/${ref.name} has no key ${ref.key}`);
  return parseHostPathConfig(text, `${ref.namespace}/${ref.name}:${ref.key}`);
}

/** The configuration the provisioner would use: --config or --config-map, else what its heartbeat names. */
async function loadConfig(
  o: ExplainOptions,
  client: KubeClient,
  ref: { namespace: string; name: string },
): Promise<FoundConfig> {
  if (o.config && o.configMap) throw new CliOptionError('--config', 'give either --config or --config-map, not both');
  if (o.config)
    return { config: parseHostPathConfig(await readFile(o.config, 'utf8'), o.config), source: `--config ${o.config}` };
  if (o.configMap) {
    const cm = parseConfigMapRef(o.configMap, o.configKey ?? DEFAULT_CONFIG_KEY);
    return {
      config: await readConfigMap(client, cm, '--config-map'),
      source: `--config-map ${cm.namespace}/${cm.name}`,
    };
  }
  return discoverConfig(o, client, ref);
}

/** The configuration a running (else the last seen) hostpath controller of the claim's provisioner names. */
async function discoverConfig(
  o: ExplainOptions,
  client: KubeClient,
  ref: { namespace: string; name: string },
): Promise<FoundConfig> {
  let claim: PersistentVolumeClaim;
  try {
    claim = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, ref.name, { namespace: ref.namespace });
  } catch (err) {
    if (err instanceof NotFoundError) return { source: 'none' }; // explainClaim reports the missing claim
    throw err;
  }
  const className = claimClassName(claim);
  const storageClass = className
    ? await client.get<StorageClass>(storageClasses, className).catch(() => undefined)
    : undefined;
  const provisionerName =
    o.provisionerName ?? claimProvisionerName(claim) ?? storageClass?.provisioner ?? DEFAULT_PROVISIONER_NAME;
  const now = Date.now();
  const { mine } = judgePresence(
    await readControllerPresence(client, provisionerName, now),
    provisionerName,
    claim,
    now,
  );
  const beat = mine.find((h) => h.details[HOSTPATH_CONFIG_DETAIL] !== undefined);
  if (!beat)
    return {
      source: `none (no hostpath controller of ${provisionerName} names its configuration; give --config or --config-map)`,
    };
  const from = `named by the heartbeat of ${beat.identity || 'a stopped controller'} in ${beat.namespace}`;
  let location: HostPathConfigLocation;
  try {
    location = JSON.parse(beat.details[HOSTPATH_CONFIG_DETAIL]) as HostPathConfigLocation;
  } catch {
    return { source: `none (the heartbeat's ${HOSTPATH_CONFIG_DETAIL} is not JSON)` };
  }
  if ('configMap' in location) {
    const cm = location.configMap;
    return {
      config: await readConfigMap(client, cm, '--config-map'),
      source: `ConfigMap ${cm.namespace}/${cm.name} key ${cm.key}, ${from}`,
    };
  }
  // A file is readable here when explain runs where the controller does (dev), not inside a pod's mount.
  if (!existsSync(location.file))
    return {
      source: `none (the controller's file ${location.file}, ${from}, is not on this machine; give --config or --config-map)`,
    };
  return {
    config: parseHostPathConfig(await readFile(location.file, 'utf8'), location.file),
    source: `file ${location.file}, ${from}`,
  };
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
export async function explainPvc(
  ref: { namespace: string; name: string },
  o: ExplainOptions,
): Promise<{ explanation: ClaimExplanation; text: string }> {
  const { kubeConfig } = loadCliKubeConfig({ path: o.kubeconfig, context: o.context });
  const client = new KubeClient({
    kubeConfig,
    userAgent: userAgent('explain'),
    timeoutMs: o.kubeApiTimeout,
    maxRetries: 1,
  });
  try {
    const { config, source } = await loadConfig(o, client, ref);
    // The same checks provision() runs, as the instance that serves the claim's node would run them (a node-local
    // instance, or a deployment-mode one on that node): explain does not know where instances run, so another
    // node's claim is not reported as refused for that reason. Without a node: a deployment-mode instance.
    const provisioner: Pick<Provisioner, 'checkClaim'> | undefined = config
      ? {
          checkClaim: (input) =>
            new HostPathProvisioner(
              input.selectedNodeName ? { config, mode: 'daemonset', nodeName: input.selectedNodeName } : { config },
            ).checkClaim(input),
        }
      : undefined;
    const explanation = await explainClaim(client, ref.namespace, ref.name, {
      provisionerName: o.provisionerName,
      defaultProvisionerName: DEFAULT_PROVISIONER_NAME,
      provisioner,
    });
    explanation.facts.push(`hostpath configuration: ${source}`);
    const text =
      o.output === 'json'
        ? JSON.stringify(explanation, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)
        : formatExplanation(explanation);
    return { explanation, text };
  } finally {
    client.close();
  }
}

/** Registers `explain pvc`. */
export function registerExplainCommand(program: Command): void {
  const explain = program
    .command('explain')
    .description('explain what the provisioning controller decides for an object, and why');
  const pvc = new Command('pvc')
    .description('why a PersistentVolumeClaim is (or is not) being provisioned')
    .argument('<namespace/name>', 'the claim (a bare name means namespace "default")')
    .addOption(
      new Option('--provisioner-name <name>', "explain for this provisioner (default: the claim's, else its class's)"),
    )
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .addOption(
      new Option(
        '--config <file>',
        'the hostpath configuration the provisioner runs with: run its own checks too (default: the one its running controller names)',
      ),
    )
    .addOption(new Option('--config-map <namespace/name>', 'the same, from its ConfigMap'))
    .addOption(new Option('--config-key <key>', 'the ConfigMap key').default(DEFAULT_CONFIG_KEY));
  addConnectionOptions(pvc);
  pvc.action(async (ref: string, flags: ExplainOptions) => {
    const { text } = await explainPvc(parseClaimRef(ref), flags);
    process.stdout.write(`${text}\n`);
  });
  explain.addCommand(pvc);
}
