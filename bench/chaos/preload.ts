// Chaos hooks for a `kube-provisioner run hostpath` process, loaded with `node --import tsx --import
// ./bench/chaos/preload.ts src/cli/main.ts ...`: nothing of it ships in the command. Configured by environment:
//   KP_CHAOS_FS_FAIL_RATE         probability that one mkdir/rmdir/unlink/rename of a volume directory fails (EIO)
//   KP_CHAOS_FS_ROOT              only paths below this root (and the /proc/self/fd paths volume-dirs.ts walks) fail
//   KP_CHAOS_CRASH_AFTER_PROVISION probability that the process SIGKILLs itself right after provision() returned,
//                                 before the controller could save the PV
//   KP_CHAOS_CRASH_AFTER_DELETE   same after delete() removed the directory, before the PV was deleted
//   KP_CHAOS_SEED                 seed of this process's decisions
// SIGUSR2 turns every fault off (the harness sends it when the fault phase ends). Every injected fault is
// logged to stderr as one JSON line with a `chaos` key, which the harness counts.
import { writeSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { mulberry32 } from './prng.ts';

const env = process.env;
const rate = (name: string) => {
  const v = Number(env[name] ?? '0');
  return Number.isFinite(v) && v > 0 ? Math.min(v, 1) : 0;
};
const fsFailRate = rate('KP_CHAOS_FS_FAIL_RATE');
const crashAfterProvision = rate('KP_CHAOS_CRASH_AFTER_PROVISION');
const crashAfterDelete = rate('KP_CHAOS_CRASH_AFTER_DELETE');
const root = env.KP_CHAOS_FS_ROOT ?? '';
const random = mulberry32(Number(env.KP_CHAOS_SEED ?? '1') ^ process.pid);
let enabled = true;

process.on('SIGUSR2', () => {
  enabled = false;
  note({ chaos: 'off' });
});

function note(fields: Record<string, unknown>): void {
  // Synchronous: the line must be written before a SIGKILL we send ourselves.
  writeSync(2, `${JSON.stringify({ time: Date.now(), pid: process.pid, ...fields })}\n`);
}

const isVolumePath = (p: unknown) =>
  typeof p === 'string' && (p.startsWith('/proc/self/fd/') || (root !== '' && p.startsWith(`${root}/`)));

type FsFn = (...args: never[]) => Promise<unknown>;
const fsTable = fsp as unknown as Record<string, FsFn>;

if (fsFailRate > 0) {
  for (const op of ['mkdir', 'rmdir', 'unlink', 'rename'] as const) {
    const original = fsTable[op];
    fsTable[op] = async function chaosWrapped(this: unknown, ...args: never[]) {
      if (enabled && isVolumePath(args[0]) && random() < fsFailRate) {
        note({ chaos: 'fs', op, path: String(args[0]) });
        throw Object.assign(new Error(`chaos: injected EIO on ${op}`), { code: 'EIO', errno: -5, syscall: op });
      }
      return original.apply(this, args);
    };
  }
}

const proto = HostPathProvisioner.prototype;
if (crashAfterProvision > 0) {
  const provision = proto.provision;
  proto.provision = async function chaosProvision(this: HostPathProvisioner, ...args: Parameters<typeof provision>) {
    const result = await provision.apply(this, args);
    if (enabled && random() < crashAfterProvision) {
      note({ chaos: 'crash', point: 'after-provision', pv: args[0].pvName });
      process.kill(process.pid, 'SIGKILL');
    }
    return result;
  };
}
if (crashAfterDelete > 0) {
  const del = proto.delete;
  proto.delete = async function chaosDelete(this: HostPathProvisioner, ...args: Parameters<typeof del>) {
    await del.apply(this, args);
    if (enabled && random() < crashAfterDelete) {
      note({ chaos: 'crash', point: 'after-delete', pv: args[0].metadata.name });
      process.kill(process.pid, 'SIGKILL');
    }
  };
}
