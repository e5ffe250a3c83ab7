// The table of `kube-provisioner` subcommands: name, one-line description and how to load the module that
// defines it. main.ts imports only the module of the subcommand being run, so `--help`, `--version` and
// `explain` never load the embedded cluster (SQLite, x509) and `run hostpath` loads no cluster code.
import type { Command } from 'commander';

/** One subcommand: its description for the top-level help and a loader of its registration function. */
export interface SubcommandEntry {
  name: string;
  description: string;
  load(): Promise<(program: Command) => void>;
}

/** Every subcommand, in help order. The descriptions must equal the registered ones (a test checks). */
export const SUBCOMMANDS: readonly SubcommandEntry[] = [
  {
    name: 'cluster',
    description: 'run the embedded Kubernetes-compatible API server (HTTPS, bearer token, SQLite under --data-dir)',
    load: async () => (await import('./cluster.ts')).registerClusterCommand,
  },
  {
    name: 'dev',
    description: 'run the embedded cluster, this machine as a node, and the hostpath provisioner, all in one process',
    load: async () => (await import('./dev.ts')).registerDevCommand,
  },
  {
    name: 'run',
    description: 'run a provisioner against a cluster',
    load: async () => (await import('./run-hostpath.ts')).registerRunCommand,
  },
  {
    name: 'explain',
    description: 'explain what the provisioning controller decides for an object, and why',
    load: async () => (await import('./explain.ts')).registerExplainCommand,
  },
];

/**
 * The subcommand named by the arguments (after the node binary and script), or undefined for the top level
 * (`--help`, `--version`, nothing). `help NAME` names NAME.
 */
export function subcommandOf(args: readonly string[]): SubcommandEntry | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return SUBCOMMANDS.find((c) => c.name === name);
}
