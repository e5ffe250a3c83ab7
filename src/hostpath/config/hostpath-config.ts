// The hostpath provisioner's configuration: local-path's shape (nodePathMap with the default-node entry,
// sharedFileSystemPath, storageClassConfigs) in JSON or YAML, plus a per-path `capacity` and an `nfs` export
// of our own, and local-path's ConfigMap companions (setup/teardown scripts, cmdTimeoutSeconds). Keys match
// case-insensitively, as Go's encoding/json matches them for local-path. Parsing is pure and lexical;
// checkConfigPaths() adds the filesystem checks for the paths this instance will use. The file watcher
// lives in config-file-source.ts, the ConfigMap informer in config-map-source.ts.
import fsp from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import { parseQuantity, isQuantity } from '../../types/quantity.ts';
import { checkBasePath, isStrictlyUnder, UnsafePathError } from '../paths/path-safety.ts';
import { isJsonObject } from '../../types/json.ts';

/** local-path's name for the entry that applies to every node not listed by name. */
export const DEFAULT_NODE = 'DEFAULT_PATH_FOR_NON_LISTED_NODES';

/** A base directory volumes are created in, with an optional capacity (bytes) for allocation accounting. */
export interface BasePath {
  path: string;
  capacity?: bigint;
}

/** The base paths of one node (or of every node not listed, with DEFAULT_NODE). */
export interface NodePaths {
  /** A node name, or DEFAULT_NODE. */
  node: string;
  /** Empty: this node gets no volumes (claims are rescheduled elsewhere). */
  paths: BasePath[];
}

/** An NFS export: its server and the path the server exports (nfs-subdir's NFS_SERVER and NFS_PATH). */
export interface NfsExport {
  server: string;
  path: string;
}

/** Where volumes go: node-local paths, or one shared filesystem path (exclusive). */
export interface PathSet {
  nodePathMap: NodePaths[];
  sharedFileSystemPath?: BasePath;
  /**
   * The shared path is the local mount of this NFS export: PVs are published as `nfs: {server, path}`
   * (nfs-subdir's shape) instead of hostPath. Only with sharedFileSystemPath.
   */
  nfs?: NfsExport;
}

/** local-path's `setup` and `teardown` ConfigMap scripts, run by the provisioner itself with `sh -c`. */
export interface VolumeScripts {
  setup?: string;
  teardown?: string;
  /** From cmdTimeoutSeconds; default 120 s as in local-path. */
  timeoutMs: number;
}

/** The other keys of local-path's ConfigMap, beside config.json. */
export interface ConfigCompanions {
  setup?: string;
  teardown?: string;
  'helperPod.yaml'?: string;
}

/** The hostpath provisioner configuration: node-local paths by node, a shared path, per-class path sets. */
export interface HostPathConfig extends PathSet {
  /**
   * Per-class path sets. A class not listed gets the top-level paths when there are any, else it is refused (as
   * local-path refuses it).
   */
  storageClassConfigs: Record<string, PathSet>;
  scripts: VolumeScripts;
  /** Keys accepted for compatibility but without effect here (local-path's helper-pod settings). */
  warnings: string[];
}

/** local-path's default cmdTimeoutSeconds. */
/** Anything that has a current configuration (ConfigFileSource, or a ConfigMap-backed holder). */
export interface ConfigHolder {
  current(): HostPathConfig;
}

export const DEFAULT_SCRIPT_TIMEOUT_MS = 120_000;
const MAX_SCRIPT_BYTES = 64 * 1024;

/** An invalid configuration; `issues` lists every problem found, each naming its key. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    readonly issues: string[],
    source = 'config',
  ) {
    super(`invalid hostpath ${source}: ${issues.join('; ')}`);
  }
}

// Binaries inside local-path's helper image: there is no helper image here.
const IGNORED_KEYS = ['setupCommand', 'teardownCommand'];
const SET_KEYS = ['nodePathMap', 'sharedFileSystemPath', 'nfs'];
const TOP_KEYS = [...SET_KEYS, 'storageClassConfigs', 'cmdTimeoutSeconds', ...IGNORED_KEYS];

/** Parses and validates (lexically) a JSON or YAML configuration text. Throws ConfigError. */
export function parseHostPathConfig(
  text: string,
  source = 'config',
  companions: ConfigCompanions = {},
): HostPathConfig {
  let raw: unknown;
  try {
    raw = YAML.parse(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (e) {
    throw new ConfigError([`not valid JSON or YAML: ${(e as Error).message}`], source);
  }
  return validateHostPathConfig(raw, source, companions);
}

/**
 * Go's encoding/json matches object keys to fields case-insensitively (local-path's own test configuration
 * writes `sharedFilesystemPath`): returns the object with known keys in their canonical spelling. Two
 * spellings of one key are an issue rather than last-one-wins.
 */
export function canonicalKeys(
  raw: Record<string, unknown>,
  known: readonly string[],
  where: string,
  issues: string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const canonical = known.find((k) => k === key) ?? known.find((k) => k.toLowerCase() === key.toLowerCase()) ?? key;
    if (Object.prototype.hasOwnProperty.call(out, canonical))
      issues.push(`${where}${key}: ${canonical} is given twice (keys match case-insensitively)`);
    else out[canonical] = value;
  }
  return out;
}

/** Validates an already-decoded configuration object (and local-path's ConfigMap companions). Throws ConfigError. */
export function validateHostPathConfig(
  input: unknown,
  source = 'config',
  companions: ConfigCompanions = {},
): HostPathConfig {
  const issues: string[] = [];
  const warnings: string[] = [];
  if (!isJsonObject(input)) throw new ConfigError(['must be an object'], source);
  const raw = canonicalKeys(input, TOP_KEYS, '', issues);
  for (const key of Object.keys(raw)) {
    if (IGNORED_KEYS.includes(key))
      warnings.push(
        `${key} has no effect: kube-provisioner uses no helper pods (put the commands in the setup/teardown scripts)`,
      );
    else if (!TOP_KEYS.includes(key)) issues.push(`${key}: unknown key`);
  }
  const scripts = volumeScripts(raw.cmdTimeoutSeconds, companions, issues);
  if (companions['helperPod.yaml'] !== undefined) {
    warnings.push(
      'helperPod.yaml has no effect: kube-provisioner runs the setup and teardown scripts itself, no helper pods are used',
    );
  }
  const global = pathSet(raw, '', issues);
  const storageClassConfigs: Record<string, PathSet> = {};
  if (raw.storageClassConfigs !== undefined && raw.storageClassConfigs !== null) {
    if (!isJsonObject(raw.storageClassConfigs))
      issues.push('storageClassConfigs: must be a map of class name to {nodePathMap | sharedFileSystemPath}');
    else {
      for (const [name, value] of Object.entries(raw.storageClassConfigs)) {
        const where = `storageClassConfigs.${name}`;
        if (!isJsonObject(value)) {
          issues.push(`${where}: must be an object`);
          continue;
        }
        const entry = canonicalKeys(value, SET_KEYS, `${where}.`, issues);
        for (const key of Object.keys(entry)) if (!SET_KEYS.includes(key)) issues.push(`${where}.${key}: unknown key`);
        const set = pathSet(entry, `${where}.`, issues);
        if (isEmpty(set)) issues.push(`${where}: needs nodePathMap or sharedFileSystemPath`);
        storageClassConfigs[name] = set;
      }
    }
  }
  if (isEmpty(global) && Object.keys(storageClassConfigs).length === 0) {
    issues.push('no paths: set nodePathMap, sharedFileSystemPath or storageClassConfigs');
  }
  checkNesting([global, ...Object.values(storageClassConfigs)], issues);
  if (issues.length > 0) throw new ConfigError(issues, source);
  return { ...global, storageClassConfigs, scripts, warnings };
}

function volumeScripts(timeout: unknown, companions: ConfigCompanions, issues: string[]): VolumeScripts {
  const scripts: VolumeScripts = { timeoutMs: DEFAULT_SCRIPT_TIMEOUT_MS };
  // local-path: 0 or absent means the default.
  if (timeout !== undefined && timeout !== null && timeout !== 0) {
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0 || timeout > 86_400)
      issues.push('cmdTimeoutSeconds: must be a whole number of seconds up to 86400');
    else scripts.timeoutMs = timeout * 1000;
  }
  for (const name of ['setup', 'teardown'] as const) {
    const text = companions[name];
    if (text === undefined || text.trim() === '') continue;
    if (Buffer.byteLength(text) > MAX_SCRIPT_BYTES)
      issues.push(`${name}: script is larger than ${MAX_SCRIPT_BYTES} bytes`);
    else if (text.includes('\0')) issues.push(`${name}: script contains a NUL byte`);
    else scripts[name] = text;
  }
  return scripts;
}

function nfsExport(raw: unknown, at: string, issues: string[]): NfsExport | undefined {
  if (!isJsonObject(raw)) {
    issues.push(`${at}: must be {server, path}`);
    return undefined;
  }
  const e = canonicalKeys(raw, ['server', 'path'], `${at}.`, issues);
  for (const key of Object.keys(e)) if (key !== 'server' && key !== 'path') issues.push(`${at}.${key}: unknown key`);
  const bad = checkNfsExport(e.server, e.path);
  if (bad) {
    issues.push(`${at}: ${bad}`);
    return undefined;
  }
  return { server: e.server as string, path: e.path as string };
}

/** Why `server` / `path` are not a usable NFS export (undefined when they are). Shared with the CLI flags. */
export function checkNfsExport(server: unknown, exportPath: unknown): string | undefined {
  if (typeof server !== 'string' || !/^[A-Za-z0-9]([-A-Za-z0-9.:[\]]{0,252})$/.test(server))
    return `server ${JSON.stringify(server)} must be a host name or IP address`;
  if (
    typeof exportPath !== 'string' ||
    !exportPath.startsWith('/') ||
    (exportPath !== '/' && path.posix.normalize(exportPath) !== exportPath) ||
    (exportPath.endsWith('/') && exportPath !== '/')
  ) {
    return `path ${JSON.stringify(exportPath)} must be the absolute, normalised path the server exports`;
  }
  return undefined;
}

function pathSet(raw: Record<string, unknown>, where: string, issues: string[]): PathSet {
  const set: PathSet = { nodePathMap: [] };
  const shared = raw.sharedFileSystemPath;
  if (shared !== undefined && shared !== null && shared !== '') {
    const bp = basePath(shared, `${where}sharedFileSystemPath`, issues);
    if (bp) set.sharedFileSystemPath = bp;
  }
  if (raw.nfs !== undefined && raw.nfs !== null) {
    if (shared === undefined || shared === null || shared === '')
      issues.push(`${where}nfs: needs sharedFileSystemPath (the directory the export is mounted at)`);
    const e = nfsExport(raw.nfs, `${where}nfs`, issues);
    if (e) set.nfs = e;
  }
  const map = raw.nodePathMap;
  if (map === undefined || map === null) return set;
  if (!Array.isArray(map)) {
    issues.push(`${where}nodePathMap: must be a list of {node, paths}`);
    return set;
  }
  if (map.length > 0 && set.sharedFileSystemPath) {
    issues.push(
      `${where}nodePathMap and ${where}sharedFileSystemPath are exclusive: nodePathMap must be empty when a shared path is set`,
    );
  }
  const nodes = new Set<string>();
  map.forEach((item: unknown, i) => {
    const at = `${where}nodePathMap[${i}]`;
    const entry = isJsonObject(item) ? canonicalKeys(item, ['node', 'paths'], `${at}.`, issues) : item;
    if (!isJsonObject(entry) || typeof entry.node !== 'string' || entry.node === '') {
      issues.push(`${at}: needs a non-empty "node"`);
      return;
    }
    for (const key of Object.keys(entry))
      if (key !== 'node' && key !== 'paths') issues.push(`${at}.${key}: unknown key`);
    if (nodes.has(entry.node)) issues.push(`${at}: node ${entry.node} is listed twice`);
    nodes.add(entry.node);
    if (!Array.isArray(entry.paths)) {
      issues.push(`${at}.paths: must be a list (empty to give node ${entry.node} no volumes)`);
      return;
    }
    const paths: BasePath[] = [];
    entry.paths.forEach((p: unknown, j) => {
      const bp = basePath(p, `${at}.paths[${j}]`, issues);
      if (!bp) return;
      if (paths.some((q) => q.path === bp.path))
        issues.push(`${at}.paths[${j}]: ${bp.path} is listed twice for node ${entry.node}`);
      else paths.push(bp);
    });
    set.nodePathMap.push({ node: entry.node, paths });
  });
  return set;
}

function basePath(raw: unknown, at: string, issues: string[]): BasePath | undefined {
  let p: unknown = raw;
  let capacity: bigint | undefined;
  if (isJsonObject(raw)) {
    const obj = canonicalKeys(raw, ['path', 'capacity'], `${at}.`, issues);
    for (const key of Object.keys(obj))
      if (key !== 'path' && key !== 'capacity') issues.push(`${at}.${key}: unknown key`);
    p = obj.path;
    if (obj.capacity !== undefined) {
      const c = typeof obj.capacity === 'number' ? String(obj.capacity) : obj.capacity;
      if (!isQuantity(c) || parseQuantity(c) <= 0n)
        issues.push(`${at}.capacity: ${JSON.stringify(obj.capacity)} is not a positive quantity such as "100Gi"`);
      else capacity = parseQuantity(c);
    }
  }
  if (typeof p !== 'string') {
    issues.push(`${at}: must be a path string or {path, capacity}`);
    return undefined;
  }
  try {
    checkBasePath(p);
  } catch (e) {
    if (!(e instanceof UnsafePathError)) throw e;
    issues.push(`${at}: ${JSON.stringify(p)} must be an absolute, normalised path other than /`);
    return undefined;
  }
  return capacity === undefined ? { path: p } : { path: p, capacity };
}

// Two base paths where one contains the other would let one path's volumes land inside the other's.
function checkNesting(sets: PathSet[], issues: string[]): void {
  const nodePaths = new Set<string>();
  const sharedPaths = new Set<string>();
  for (const s of sets) {
    for (const n of s.nodePathMap) for (const p of n.paths) nodePaths.add(p.path);
    if (s.sharedFileSystemPath) sharedPaths.add(s.sharedFileSystemPath.path);
  }
  const all = [...new Set([...nodePaths, ...sharedPaths])].sort();
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length && all[j].startsWith(all[i]); j++) {
      if (isStrictlyUnder(all[i], all[j])) issues.push(`paths must not be nested: ${all[j]} is inside ${all[i]}`);
    }
  }
  for (const p of sharedPaths) if (nodePaths.has(p)) issues.push(`${p} cannot be both a shared path and a node path`);
}

/**
 * The path set for a class: its storageClassConfigs entry; else the top-level one when it has paths (the default
 * for every class not listed); else undefined: a class not listed is refused, as local-path refuses it.
 */
export function pathSetForClass(config: HostPathConfig, className: string): PathSet | undefined {
  if (Object.prototype.hasOwnProperty.call(config.storageClassConfigs, className))
    return config.storageClassConfigs[className];
  if (Object.keys(config.storageClassConfigs).length > 0 && isEmpty(config)) return undefined;
  return config;
}

/** The base paths of `node` in a path set (its own entry, else the default entry); undefined when neither. */
export function nodeBasePaths(set: PathSet, node: string): BasePath[] | undefined {
  return (set.nodePathMap.find((n) => n.node === node) ?? set.nodePathMap.find((n) => n.node === DEFAULT_NODE))?.paths;
}

/** Every base path this instance may hold volumes in: the node's paths (when known) and all shared paths. */
export function localBasePaths(config: HostPathConfig, nodeName?: string): BasePath[] {
  const out = new Map<string, BasePath>();
  for (const set of [config, ...Object.values(config.storageClassConfigs)]) {
    if (set.sharedFileSystemPath) out.set(set.sharedFileSystemPath.path, set.sharedFileSystemPath);
    if (nodeName !== undefined) for (const p of nodeBasePaths(set, nodeName) ?? []) out.set(p.path, p);
  }
  return [...out.values()];
}

/** Every base path named anywhere in the configuration (any node). */
export function allBasePaths(config: HostPathConfig): string[] {
  const out = new Set<string>();
  for (const set of [config, ...Object.values(config.storageClassConfigs)]) {
    if (set.sharedFileSystemPath) out.add(set.sharedFileSystemPath.path);
    for (const n of set.nodePathMap) for (const p of n.paths) out.add(p.path);
  }
  return [...out];
}

/**
 * Filesystem checks for the paths this instance uses (localBasePaths): each must be a real directory (not
 * a symlink, not a file), or missing with an existing directory above it (creatable). Throws ConfigError.
 */
export async function checkConfigPaths(
  config: HostPathConfig,
  opts: { nodeName?: string; source?: string } = {},
): Promise<void> {
  const issues: string[] = [];
  for (const { path: p } of localBasePaths(config, opts.nodeName)) {
    const st = await fsp.lstat(p).catch(() => undefined);
    if (st?.isSymbolicLink()) issues.push(`${p}: is a symlink (use the real path)`);
    else if (st && !st.isDirectory()) issues.push(`${p}: is not a directory`);
    else if (!st) {
      let up = path.dirname(p);
      let ust = await fsp.stat(up).catch(() => undefined);
      while (!ust && up !== '/') {
        up = path.dirname(up);
        ust = await fsp.stat(up).catch(() => undefined);
      }
      if (!ust?.isDirectory()) issues.push(`${p}: does not exist and cannot be created (${up} is not a directory)`);
    }
  }
  if (issues.length > 0) throw new ConfigError(issues, opts.source);
}

/** Parses, validates and checks the filesystem in one call. */
export async function loadHostPathConfig(
  text: string,
  opts: { nodeName?: string; source?: string; companions?: ConfigCompanions } = {},
): Promise<HostPathConfig> {
  const config = parseHostPathConfig(text, opts.source, opts.companions);
  await checkConfigPaths(config, opts);
  return config;
}

function isEmpty(set: PathSet): boolean {
  return !set.sharedFileSystemPath && set.nodePathMap.length === 0;
}
