// The filesystem facade of the hostpath provisioner: every filesystem call on the provision, delete and expand
// paths (volume directories, records, path claims, identity checks) goes through one injected HostFs, so a test
// can count them honestly (and make one fail) without patching Node's globals. The default is node:fs/promises.
import fsp, { type FileHandle } from 'node:fs/promises';
import type { Dir, MakeDirectoryOptions, Mode, OpenMode, RmOptions, Stats } from 'node:fs';

/** The filesystem calls the hostpath provisioner makes. FileHandle methods are calls on what open() returned. */
export interface HostFs {
  open(path: string, flags: number | OpenMode, mode?: Mode): Promise<FileHandle>;
  opendir(path: string): Promise<Dir>;
  mkdir(path: string, options: MakeDirectoryOptions & { recursive?: false }): Promise<void>;
  rmdir(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  lstat(path: string): Promise<Stats>;
  stat(path: string): Promise<Stats>;
  realpath(path: string): Promise<string>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rm(path: string, options: RmOptions): Promise<void>;
  readFile(path: string): Promise<string>;
  /** Writes a whole file; `flag: 'wx'` fails with EEXIST when it exists (the exclusive create path claims use). */
  writeFile(path: string, data: string, options: { mode: number; flag: 'w' | 'wx' }): Promise<void>;
}

/** The real filesystem. */
export const nodeHostFs: HostFs = {
  open: (p, flags, mode) => fsp.open(p, flags, mode),
  opendir: (p) => fsp.opendir(p),
  mkdir: async (p, options) => {
    await fsp.mkdir(p, options);
  },
  rmdir: (p) => fsp.rmdir(p),
  readdir: (p) => fsp.readdir(p),
  lstat: (p) => fsp.lstat(p),
  stat: (p) => fsp.stat(p),
  realpath: (p) => fsp.realpath(p),
  rename: (a, b) => fsp.rename(a, b),
  unlink: (p) => fsp.unlink(p),
  rm: (p, options) => fsp.rm(p, options),
  readFile: (p) => fsp.readFile(p, 'utf8'),
  writeFile: (p, data, options) => fsp.writeFile(p, data, options),
};

/** The facade to use: the injected one, or the real filesystem. */
export const hostFsOf = (o?: { fs?: HostFs }): HostFs => o?.fs ?? nodeHostFs;

/** The errno code of a failed filesystem call (undefined for anything else). */
export const errnoCode = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;
