// Entry point of the `kube-provisioner` command: one commander program. Only the module of the subcommand
// being run is imported (commands.ts), so the top-level help and --version start in tens of milliseconds.
import { Command } from 'commander';
import { SUBCOMMANDS, subcommandOf } from './commands.ts';
import { VERSION } from './version.ts';

const program = new Command();
program.name('kube-provisioner').description('Kubernetes dynamic volume provisioning for TypeScript').version(VERSION);
// Environment fallbacks of the flags, read from process.env here and nowhere else (loaded only when a command
// runs, so --help and --version stay cheap).
program.hook('preAction', async (_program, action) => {
  (await import('./flags.ts')).applyEnvironment(action, process.env);
  // The long-running commands (`run hostpath`, `run csi`, the plugin, and `dev` with its cluster thread) keep their
  // heap near their live data ($KUBE_PROVISIONER_HEAP_GROWTH_PERCENT, default 30; docs/benchmarks.md, "Controller
  // memory" and "`dev` memory: the collector policy and what is kept per claim").
  if (action.parent?.name() === 'run' || action.name() === 'dev')
    (await import('../runtime/heap-policy.ts')).applyHeapPolicy(process.env);
});

try {
  const selected = subcommandOf(process.argv.slice(2));
  if (selected) (await selected.load())(program);
  else for (const c of SUBCOMMANDS) program.command(c.name).description(c.description);
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`kube-provisioner: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
