// `kube-provisioner explain pvc NS/NAME`: why a claim is (or is not) being provisioned, from the same
// decideClaim the controller runs, on objects fetched once (no controller needed). Exit 0 with the
// explanation; 1 when the claim does not exist or the cluster cannot be reached.
import { Command, Option } from 'commander';
import { explainClaim, formatExplanation, type ClaimExplanation } from '../controller/explain.ts';
import { KubeClient } from '../runtime/client.ts';
import { loadCliKubeConfig } from './user-errors.ts';
import { addConnectionOptions, CliOptionError } from './options.ts';

export interface ExplainOptions {
  kubeconfig?: string;
  context?: string;
  /** Explain for this provisioner (default: the one the claim was handed to, else its class's). */
  provisionerName?: string;
  output: 'text' | 'json';
  kubeApiTimeout?: number;
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
  const client = new KubeClient({ kubeConfig, userAgent: 'kube-provisioner/0.1.0 (explain)', timeoutMs: o.kubeApiTimeout, maxRetries: 1 });
  try {
    const explanation = await explainClaim(client, ref.namespace, ref.name, { provisionerName: o.provisionerName });
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
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'));
  addConnectionOptions(pvc);
  pvc.action(async (ref: string, flags: ExplainOptions) => {
    const { text } = await explainPvc(parseClaimRef(ref), flags);
    process.stdout.write(`${text}\n`);
  });
  explain.addCommand(pvc);
}
