// The end-of-run checks of a chaos run, on the settled state: claims and PVs from the API, directories and
// records on disk, the sibling "outside" tree, and what the provisioner logs say happened (provision() calls,
// directory deletions, injected faults). Each broken invariant becomes a Violation naming the claim or volume.
import { readFileSync } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { RETAIN_CLASS, type ClaimRecord } from './workload.ts';

export interface Violation {
  invariant: string;
  claim?: string;
  pv?: string;
  detail: string;
  /** Log lines about the claim or volume (filled in by the harness). */
  evidence?: string[];
}

/** What the provisioner logs say, per PV name: "ready" = provision() finished, "deleted" = directory removed. */
export interface LogFacts {
  ready: Map<string, number[]>;
  deleted: Map<string, number[]>;
  crashes: Map<string, number>;
  crashedPvs: Map<string, number[]>;
  fsFaults: Map<string, number>;
  /** provision() returned the same volume again before it was ever deleted. */
  duplicateProvisions: number;
  /** ...of which right after a crash we injected between provision() and the PV save. */
  duplicatesAfterCrash: number;
  /** PVs whose directory was deleted twice without a provision in between. */
  doubleDeletes: string[];
  /** delete() calls that found the directory already gone (a retry after a crash or failure, or a concurrent delete). */
  deletesOfMissing: number;
  /** Log lines that are not JSON (stack traces, warnings): counted, the first few kept. */
  otherLines: string[];
}

interface LogLine {
  time?: number;
  msg?: string;
  pv?: string;
  chaos?: string;
  op?: string;
  point?: string;
}

export function parseLogs(files: string[]): LogFacts {
  const facts: LogFacts = {
    ready: new Map(),
    deleted: new Map(),
    crashes: new Map(),
    crashedPvs: new Map(),
    fsFaults: new Map(),
    duplicateProvisions: 0,
    duplicatesAfterCrash: 0,
    doubleDeletes: [],
    deletesOfMissing: 0,
    otherLines: [],
  };
  const push = (m: Map<string, number[]>, k: string, t: number) => m.set(k, [...(m.get(k) ?? []), t]);
  const inc = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const file of files) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) {
        if (line.trim() && !line.startsWith('kube-provisioner run hostpath') && facts.otherLines.length < 20)
          facts.otherLines.push(line.slice(0, 300));
        continue;
      }
      let l: LogLine;
      try {
        l = JSON.parse(line) as LogLine;
      } catch {
        continue;
      }
      const t = l.time ?? 0;
      if (l.chaos === 'fs') inc(facts.fsFaults, l.op ?? '?');
      else if (l.chaos === 'crash') {
        inc(facts.crashes, l.point ?? '?');
        if (l.pv) push(facts.crashedPvs, l.pv, t);
      } else if (l.pv && l.msg === 'volume directory ready') push(facts.ready, l.pv, t);
      else if (l.pv && l.msg === 'volume directory deleted') push(facts.deleted, l.pv, t);
      else if (l.pv && l.msg === 'volume directory was already gone') facts.deletesOfMissing++;
    }
  }
  // Per volume, in time order: R(eady) R = a duplicate provision, D D = a double delete.
  for (const pv of new Set([...facts.ready.keys(), ...facts.deleted.keys()])) {
    const seq = [
      ...(facts.ready.get(pv) ?? []).map((t) => ({ t, k: 'R' })),
      ...(facts.deleted.get(pv) ?? []).map((t) => ({ t, k: 'D' })),
    ].sort((a, b) => a.t - b.t || (a.k === 'R' ? -1 : 1));
    let prev = '';
    let prevT = 0;
    for (const { t, k } of seq) {
      if (k === 'R' && prev === 'R') {
        facts.duplicateProvisions++;
        if ((facts.crashedPvs.get(pv) ?? []).some((c) => c >= prevT && c <= t)) facts.duplicatesAfterCrash++;
      }
      if (k === 'D' && prev === 'D') facts.doubleDeletes.push(pv);
      prev = k;
      prevT = t;
    }
  }
  return facts;
}

/** lstat of every entry below `dir`: relative path -> "type mode mtime size". */
export async function snapshotTree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (p: string, rel: string) => {
    const st = await fsp.lstat(p);
    out.set(
      rel,
      `${st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'file'} ${(st.mode & 0o7777).toString(8)} ${st.mtimeMs} ${st.size}`,
    );
    if (st.isDirectory())
      for (const n of (await fsp.readdir(p)).sort()) await walk(path.join(p, n), rel === '.' ? n : `${rel}/${n}`);
  };
  await walk(dir, '.');
  return out;
}

export interface CheckInput {
  claims: ClaimRecord[];
  pvcs: PersistentVolumeClaim[];
  pvs: PersistentVolume[];
  provisionerName: string;
  /** The shared base path all volumes live in. */
  root: string;
  outsideBefore: Map<string, string>;
  outsideAfter: Map<string, string>;
  facts: LogFacts;
}

const dirOf = (pv: PersistentVolume) => pv.spec.hostPath?.path ?? pv.spec.local?.path;
const isDir = (p: string) =>
  fsp.lstat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );

export async function checkInvariants(i: CheckInput): Promise<Violation[]> {
  const v: Violation[] = [];
  const ours = i.pvs.filter((pv) => pv.metadata.annotations?.['pv.kubernetes.io/provisioned-by'] === i.provisionerName);
  const pvByName = new Map(ours.map((pv) => [pv.metadata.name ?? '', pv]));
  const pvsOfClaim = new Map<string, PersistentVolume[]>();
  for (const pv of ours) {
    const uid = pv.spec.claimRef?.uid ?? '';
    pvsOfClaim.set(uid, [...(pvsOfClaim.get(uid) ?? []), pv]);
  }
  const pvcByName = new Map(i.pvcs.map((c) => [c.metadata.name ?? '', c]));
  const rootEntries = (await fsp.readdir(i.root).catch(() => [] as string[])).sort();

  for (const rec of i.claims) {
    if (!rec.uid) {
      v.push({ invariant: 'claim-created', claim: rec.name, detail: 'the harness never saw its creation succeed' });
      continue;
    }
    const pvs = pvsOfClaim.get(rec.uid) ?? [];
    if (!rec.deleted) {
      const c = pvcByName.get(rec.name);
      if (!c || c.metadata.uid !== rec.uid) {
        v.push({ invariant: 'surviving-claim-exists', claim: rec.name, detail: 'the claim vanished' });
        continue;
      }
      if (c.status?.phase !== 'Bound')
        v.push({
          invariant: 'surviving-claim-bound',
          claim: rec.name,
          pv: `pvc-${rec.uid}`,
          detail: `phase ${c.status?.phase ?? 'none'}`,
        });
      if (pvs.length !== 1)
        v.push({
          invariant: 'one-pv-per-claim',
          claim: rec.name,
          detail: `${pvs.length} PVs reference it: ${pvs.map((p) => p.metadata.name).join(', ')}`,
        });
      const pv = c.spec.volumeName ? pvByName.get(c.spec.volumeName) : undefined;
      if (c.status?.phase === 'Bound' && !pv)
        v.push({
          invariant: 'bound-pv-exists',
          claim: rec.name,
          pv: c.spec.volumeName,
          detail: 'bound to a PV that does not exist',
        });
      if (pv && !(await isDir(dirOf(pv) ?? '')))
        v.push({
          invariant: 'bound-pv-directory-exists',
          claim: rec.name,
          pv: pv.metadata.name,
          detail: `directory ${dirOf(pv)} missing`,
        });
    } else if (rec.className === RETAIN_CLASS) {
      if (rec.boundTo && !pvByName.has(rec.boundTo))
        v.push({
          invariant: 'retain-kept',
          claim: rec.name,
          pv: rec.boundTo,
          detail: 'the Retain PV of a deleted claim is gone',
        });
      for (const pv of pvs) {
        if (!(await isDir(dirOf(pv) ?? '')))
          v.push({
            invariant: 'retain-kept',
            claim: rec.name,
            pv: pv.metadata.name,
            detail: `directory ${dirOf(pv)} of a Retain PV missing`,
          });
      }
    } else {
      for (const pv of pvs)
        v.push({
          invariant: 'deleted-claim-volume-gone',
          claim: rec.name,
          pv: pv.metadata.name,
          detail: `PV still exists (phase ${pv.status?.phase ?? 'none'})`,
        });
      const leftover = `pvc-${rec.uid}`;
      for (const d of rootEntries.filter((n) => n.startsWith(leftover)))
        v.push({
          invariant: 'deleted-claim-volume-gone',
          claim: rec.name,
          pv: leftover,
          detail: `directory ${d} still on disk`,
        });
    }
  }

  // Every PV of ours: Bound, or Released with Retain; never pointing where another PV points.
  const owners = new Map<string, string[]>();
  for (const pv of ours) {
    const dir = dirOf(pv) ?? '';
    owners.set(dir, [...(owners.get(dir) ?? []), pv.metadata.name ?? '']);
    const phase = pv.status?.phase;
    const policy = pv.spec.persistentVolumeReclaimPolicy;
    if (!(phase === 'Bound' || (phase === 'Released' && policy === 'Retain'))) {
      v.push({
        invariant: 'volume-settled',
        pv: pv.metadata.name,
        claim: pv.spec.claimRef?.name,
        detail: `phase ${phase ?? 'none'}, policy ${policy}`,
      });
    }
  }
  for (const [dir, names] of owners)
    if (names.length > 1)
      v.push({ invariant: 'one-pv-per-directory', pv: names.join(','), detail: `${dir} is shared` });

  // Every directory and record on disk belongs to exactly one PV (leaks after the inventory's grace period).
  for (const name of rootEntries) {
    if (name === '.kube-provisioner') continue;
    const full = path.join(i.root, name);
    if (!owners.has(full))
      v.push({ invariant: 'no-orphan-directory', pv: name.split('_')[0], detail: `${full} has no PV` });
  }
  const recordsDir = path.join(i.root, '.kube-provisioner', 'volumes');
  for (const f of (await fsp.readdir(recordsDir).catch(() => [] as string[])).filter((n) => n.endsWith('.json'))) {
    const pvName = f.slice(0, -5);
    if (!pvByName.has(pvName)) v.push({ invariant: 'no-orphan-record', pv: pvName, detail: `record ${f} has no PV` });
  }

  // Every directory claim (path-claims.ts) belongs to a live PV: a claim outliving its volume would hold the directory.
  const claimsDir = path.join(i.root, '.kube-provisioner', 'paths');
  for (const f of (await fsp.readdir(claimsDir).catch(() => [] as string[])).filter((n) => n.endsWith('.json'))) {
    const held = await fsp.readFile(path.join(claimsDir, f), 'utf8').then(
      (t) => (JSON.parse(t) as { pvName?: string }).pvName,
      () => undefined,
    );
    if (!held || !pvByName.has(held))
      v.push({ invariant: 'no-orphan-claim', pv: held, detail: `directory claim ${f} has no PV` });
  }

  for (const pv of i.facts.doubleDeletes)
    v.push({ invariant: 'no-double-delete', pv, detail: 'directory deleted twice without a provision in between' });

  for (const [k, val] of i.outsideBefore) {
    if (i.outsideAfter.get(k) !== val)
      v.push({ invariant: 'nothing-outside-roots', detail: `${k}: ${val} -> ${i.outsideAfter.get(k) ?? 'removed'}` });
  }
  for (const k of i.outsideAfter.keys())
    if (!i.outsideBefore.has(k)) v.push({ invariant: 'nothing-outside-roots', detail: `${k} created` });
  return v;
}
