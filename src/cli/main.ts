// Entry point of the `kube-provisioner` command: one commander program, each subcommand registered from its
// own module.
import { Command } from 'commander';
import { registerClusterCommand } from './cluster.ts';
import { registerDevCommand } from './dev.ts';
import { registerExplainCommand } from './explain.ts';
import { errorMessage } from '../types/errors.ts';
import { applyEnvironment } from './options.ts';
import { registerRunCommand } from './run-hostpath.ts';

const program = new Command();
program.name('kube-provisioner').description('Kubernetes dynamic volume provisioning for TypeScript');
registerClusterCommand(program);
registerDevCommand(program);
registerRunCommand(program);
registerExplainCommand(program);
// Environment fallbacks of the flags, read from process.env here and nowhere else.
program.hook('preAction', (_program, action) => applyEnvironment(action, process.env));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`kube-provisioner: ${errorMessage(err)}\n`);
  process.exitCode = 1;
}
