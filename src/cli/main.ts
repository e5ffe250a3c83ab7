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
  const args = process.argv.slice(2);
  const selected = subcommandOf(args);
  // The heap policy before the subcommand's modules load: loading them grew V8's young generation to 2 x 8 MB before
  // the preAction hook ran, past the policy's 2 x 4 MB, and a young generation is never shrunk by the policy.
  if (
    (selected?.name === 'run' || selected?.name === 'dev') &&
    !args.some((a) => a === '--help' || a === '-h' || a === 'help')
  )
    (await import('../runtime/heap-policy.ts')).applyHeapPolicy(process.env);
  if (selected) (await selected.load())(program);
  else for (const c of SUBCOMMANDS) program.command(c.name).description(c.description);
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`kube-provisioner: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
