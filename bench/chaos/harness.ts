// A chaos run: the embedded cluster and N hostpath provisioner replicas as separate processes on temp
// directories, claims created and deleted continuously, and during the fault phase: failing API writes (500,
// 429 + Retry-After, 409, 504), watches cut, the watch cache compacted, replicas (the leader in lease mode)
// killed with SIGKILL and restarted, the cluster process restarted on its data dir, mkdir/rm failures and
// crashes between provision() and the PV save (preload.ts). Then faults stop, the system settles, and the
// invariants of invariants.ts are checked. Deterministic decisions for a seed; timing is real.
import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KubeClient } from '../../src/runtime/client.ts';
import { AlreadyExistsError } from '../../src/runtime/status-errors.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { namespaces, persistentVolumeClaims, persistentVolumes, storageClasses } from '../../src/runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { ClusterProcess, freePort } from './cluster-process.ts';
import { checkInvariants, parseLogs, snapshotTree, type Violation } from './invariants.ts';
import { Prng } from './prng.ts';
import { ProvisionerPool } from './provisioners.ts';
import { DELETE_CLASS, NAMESPACE, RETAIN_CLASS, Workload, sleep } from './workload.ts';

export interface ChaosOptions {
  claims: number;
  durationS: number;
  seed: number;
  mode: 'lease' | 'per-claim';
  provisioners?: number;
  /** Default: one every ~25 s of fault phase, at least 2. */
  leaderKills?: number;
  /** Default: 3, plus one per 200 s beyond 600 s. */
  clusterRestarts?: number;
  /** Share of API writes that fail (default 0.05). */
  writeFaultRate?: number;
  /** Per mkdir/rmdir/unlink/rename of a volume path (default 0.02). */
  fsFailRate?: number;
  crashAfterProvision?: number;
  crashAfterDelete?: number;
  settleTimeoutS?: number;
  /** Extra `run hostpath` flags for every replica (e.g. --log-level debug). */
  provisionerArgs?: string[];
  /** Keep the work directory (it is always kept when an invariant is violated). */
  keep?: boolean;
  log?: (line: string) => void;
}

export interface ChaosReport {
  options: Required<Omit<ChaosOptions, 'log' | 'keep' | 'provisionerArgs'>>;
  workDir: string;
  ok: boolean;
  claims: { created: number; deleted: number; surviving: number; retain: number; boundBeforeDelete: number };
  injected: {
    apiErrorResponses: Record<string, number>;
    watchCuts: number;
    compactions: number;
    leaderKills: number;
    leaderKillsSkipped: number;
    clusterRestarts: number;
    fsFaults: Record<string, number>;
    crashes: Record<string, number>;
    crashRestarts: number;
  };
  harnessWriteErrors: number;
  duplicateProvisions: number;
  duplicatesAfterCrash: number;
  deletesOfMissing: number;
  provisionCalls: number;
  settleMs: number;
  faultPhaseMs: number;
  apiRequests: number;
  violations: Violation[];
  unexpectedLogLines: string[];
}

const PROVISIONER = 'chaos.kube-provisioner.io/hostpath';

/** Sorted random moments (ms) within [0.05, 0.95] of the phase, spread so they do not bunch up. */
function plan(prng: Prng, count: number, phaseMs: number): number[] {
  const slot = (0.9 * phaseMs) / Math.max(1, count);
  return Array.from({ length: count }, (_, i) => 0.05 * phaseMs + slot * (i + prng.between(0.15, 0.85)));
}

export async function runChaos(input: ChaosOptions): Promise<ChaosReport> {
  const o = {
    provisioners: 3,
    leaderKills: Math.max(2, Math.round(input.durationS / 25)),
    clusterRestarts: 3 + Math.max(0, Math.floor((input.durationS - 600) / 200)),
    writeFaultRate: 0.05,
    fsFailRate: 0.02,
    crashAfterProvision: 0.01,
    crashAfterDelete: 0.005,
    settleTimeoutS: 180,
    ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
  } as Required<ChaosOptions>;
  const log = input.log ?? (() => {});
  const prng = new Prng(o.seed);
  const workDir = await fsp.mkdtemp(path.join(os.tmpdir(), `kp-chaos-${o.mode}-`));
  const root = path.join(workDir, 'roots', 'shared');
  const outside = path.join(workDir, 'outside');
  const logDir = path.join(workDir, 'logs');
  for (const d of [root, path.join(outside, 'data', 'nested'), logDir]) await fsp.mkdir(d, { recursive: true });
  await fsp.writeFile(path.join(outside, 'data', 'precious'), 'keep\n');
  await fsp.symlink(root, path.join(outside, 'link-to-root'));
  const configFile = path.join(workDir, 'config.json');
  await fsp.writeFile(configFile, JSON.stringify({ sharedFileSystemPath: root }));
  const outsideBefore = await snapshotTree(outside);

  const cluster = new ClusterProcess(path.join(workDir, 'cluster'), await freePort(), path.join(logDir, 'cluster.log'));
  await cluster.start();
  log(`cluster at ${cluster.url}; work dir ${workDir}`);
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
    userAgent: 'chaos-harness',
    qps: 0,
    timeoutMs: 10_000,
  });
  const hard = new AbortController();
  let removeWorkDir = false;
  const pool = new ProvisionerPool({
    extraArgs: input.provisionerArgs,
    count: o.provisioners,
    kubeconfigPath: cluster.kubeconfigPath,
    provisionerName: PROVISIONER,
    configFile,
    mode: o.mode,
    logDir,
    seed: o.seed,
    chaosEnv: {
      KP_CHAOS_FS_FAIL_RATE: String(o.fsFailRate),
      KP_CHAOS_FS_ROOT: root,
      KP_CHAOS_CRASH_AFTER_PROVISION: String(o.crashAfterProvision),
      KP_CHAOS_CRASH_AFTER_DELETE: String(o.crashAfterDelete),
    },
  });
  try {
    await client.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    for (const [name, policy] of [
      [DELETE_CLASS, 'Delete'],
      [RETAIN_CLASS, 'Retain'],
    ] as const) {
      // onDelete delete: the invariants expect a deleted claim's directory gone (a shared root archives by default).
      const sc: StorageClass = {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name },
        provisioner: PROVISIONER,
        reclaimPolicy: policy,
        volumeBindingMode: 'Immediate',
        parameters: { onDelete: 'delete' },
      };
      await client.create(storageClasses, sc).catch((e: unknown) => {
        if (!(e instanceof AlreadyExistsError)) throw e;
      });
    }
    pool.start();
    await pool.waitAllUp();
    log(
      `${o.provisioners} provisioners up (${o.mode}); fault phase ${o.durationS} s, ${o.claims} claims, seed ${o.seed}`,
    );

    // ---- Fault phase.
    const phase = new AbortController();
    // Every pending claim lifetime and scheduler sleep listens on these signals.
    setMaxListeners(0, phase.signal, hard.signal);
    const phaseMs = o.durationS * 1000;
    const started = Date.now();
    // Six kinds of write faults in equal shares: four refused writes, and two applied writes whose response is lost.
    const faultRules = ['create', 'update', 'patch', 'delete'].flatMap((verb) => [
      ...[500, 429, 409, 504].map((status) => ({
        verb,
        status,
        probability: o.writeFaultRate / 6,
        retryAfterSeconds: 1,
      })),
      ...(['timeout', 'reset'] as const).map((lostResponse) => ({
        verb,
        lostResponse,
        probability: o.writeFaultRate / 6,
      })),
    ]);
    // The cluster's draws are seeded from the run seed (and the restart count), so a run can be replayed.
    const installFaults = () =>
      cluster.admin('POST', '/admin/faults', { rules: faultRules, seed: o.seed * 100 + cluster.restarts });
    await installFaults();
    const counters = { watchCuts: 0, compactions: 0, leaderKillsSkipped: 0 };
    const workload = new Workload({
      client,
      prng: new Prng(o.seed + 1),
      claims: o.claims,
      durationMs: phaseMs,
      survivorShare: 0.3,
      retainShare: 0.1,
      minLifetimeMs: 500,
      maxLifetimeMs: 15_000,
      phaseSignal: phase.signal,
      signal: hard.signal,
    });
    const at = (ms: number) => sleep(started + ms - Date.now(), phase.signal).then(() => !phase.signal.aborted);
    // A failing scheduler (e.g. the cluster cannot be restarted) ends the phase and fails the run after cleanup.
    let loopError: unknown;
    const loops: Array<Promise<unknown>> = [];
    const guard = (p: Promise<unknown>) => {
      loops.push(
        p.catch((err: unknown) => {
          loopError ??= err;
          phase.abort();
        }),
      );
    };
    guard(workload.run());
    guard(
      (async () => {
        while (await at(Date.now() - started + prng.between(3_000, 6_000))) {
          if (
            await cluster.admin('POST', '/admin/close-watches').then(
              () => true,
              () => false,
            )
          )
            counters.watchCuts++;
        }
      })(),
    );
    guard(
      (async () => {
        while (await at(Date.now() - started + prng.between(8_000, 15_000))) {
          if (
            await cluster.admin('POST', '/admin/compact').then(
              () => true,
              () => false,
            )
          )
            counters.compactions++;
        }
      })(),
    );
    // Kills and cluster restarts are obligations, not chances: on a loaded machine there can be no single leader
    // for long stretches, so a kill waits for one (however long) and the phase is extended until every planned
    // kill and restart has happened (up to a cap). A run's injected counts then do not depend on machine speed.
    const obligations: Array<Promise<unknown>> = [];
    const mustInject = (p: Promise<unknown>) => {
      obligations.push(p);
      guard(p);
    };
    mustInject(
      (async () => {
        for (const t of plan(prng, o.leaderKills, phaseMs)) {
          if (!(await at(t))) return;
          let victim: number | undefined;
          if (o.mode === 'lease') {
            while (victim === undefined && !phase.signal.aborted) {
              const leaders = await pool.leaders();
              if (leaders.length === 1) victim = leaders[0];
              else await sleep(250, phase.signal);
            }
          } else {
            const alive = pool.alive();
            if (alive.length > 0) victim = prng.pick(alive);
          }
          if (victim === undefined) counters.leaderKillsSkipped++;
          else await pool.kill(victim, prng.between(500, 2_000));
        }
      })(),
    );
    mustInject(
      (async () => {
        for (const [i, t] of plan(prng, o.clusterRestarts, phaseMs).entries()) {
          if (!(await at(t))) return;
          const signal = i % 2 === 0 ? 'SIGKILL' : 'SIGTERM';
          log(`restarting the cluster (${signal})`);
          await cluster.restart(signal);
          await installFaults().catch(() => {});
        }
      })(),
    );
    guard(
      (async () => {
        while (await at(Date.now() - started + 3_000)) await workload.observeBindings(phase.signal).catch(() => {});
      })(),
    );
    const progress = setInterval(() => {
      const c = [...workload.claims.values()];
      log(
        `t=${Math.round((Date.now() - started) / 1000)}s claims ${c.length} (bound seen ${c.filter((r) => r.boundTo).length}, deleted ${c.filter((r) => r.deleted).length}) kills ${pool.kills} crash-restarts ${pool.crashRestarts} cluster restarts ${cluster.restarts}`,
      );
    }, 15_000);
    await sleep(phaseMs, phase.signal);
    const overrun = new AbortController();
    await Promise.race([
      Promise.all(obligations),
      sleep(Math.max(60_000, phaseMs), AbortSignal.any([phase.signal, overrun.signal])),
    ]);
    overrun.abort();
    phase.abort();
    await Promise.all(loops);
    clearInterval(progress);
    if (loopError) throw loopError;
    const faultPhaseMs = Date.now() - started;

    // ---- Faults off, settle.
    if (!cluster.running) await cluster.start();
    await cluster.admin('DELETE', '/admin/faults');
    pool.disableChaos();
    await workload.observeBindings(hard.signal).catch(() => {});
    await workload.finish(hard.signal);
    log(`fault phase over after ${Math.round(faultPhaseMs / 1000)} s; settling`);
    const settleStart = Date.now();
    const survivors = [...workload.claims.values()].filter((r) => r.uid && !r.deleted);
    let pvcs: PersistentVolumeClaim[] = [];
    let pvs: PersistentVolume[] = [];
    for (;;) {
      pvcs = (await client.listAll<PersistentVolumeClaim>(persistentVolumeClaims, { namespace: NAMESPACE })).items;
      pvs = (await client.listAll<PersistentVolume>(persistentVolumes)).items;
      const bound = new Set(pvcs.filter((c) => c.status?.phase === 'Bound').map((c) => c.metadata.uid));
      const unsettledPvs = pvs.filter(
        (pv) =>
          !(
            pv.status?.phase === 'Bound' ||
            (pv.status?.phase === 'Released' && pv.spec.persistentVolumeReclaimPolicy === 'Retain')
          ),
      );
      const dirs = (await fsp.readdir(root)).filter((n) => n !== '.kube-provisioner').length;
      // Records without a directory (a kill between the two writes) wait for the leak inventory's grace period.
      const records = (
        await fsp.readdir(path.join(root, '.kube-provisioner', 'volumes')).catch(() => [] as string[])
      ).filter((n) => n.endsWith('.json')).length;
      const settled =
        survivors.every((r) => bound.has(r.uid)) &&
        unsettledPvs.length === 0 &&
        dirs === pvs.length &&
        records === pvs.length;
      if (settled || Date.now() - settleStart > o.settleTimeoutS * 1000) break;
      await sleep(2_000);
    }
    const settleMs = Date.now() - settleStart;
    log(`settled in ${Math.round(settleMs / 1000)} s; checking invariants`);
    await cluster.collectAudit().catch(() => {});
    const outsideAfter = await snapshotTree(outside);
    await pool.stop();
    const facts = parseLogs(pool.logFiles());
    const violations = await checkInvariants({
      claims: [...workload.claims.values()],
      pvcs,
      pvs,
      provisionerName: PROVISIONER,
      root,
      outsideBefore,
      outsideAfter,
      facts,
    });
    addEvidence(violations, pool.logFiles());

    const audit = cluster.auditTotals();
    const apiErrorResponses: Record<string, number> = {};
    // Code 0: a lost response whose connection was reset (the write was applied, no status was sent).
    for (const a of audit) {
      if (![0, 409, 429, 500, 504].includes(a.code) || !['create', 'update', 'patch', 'delete'].includes(a.verb))
        continue;
      const key = a.code === 0 ? 'reset' : String(a.code);
      apiErrorResponses[key] = (apiErrorResponses[key] ?? 0) + a.count;
    }
    const claims = [...workload.claims.values()];
    const report: ChaosReport = {
      options: {
        claims: o.claims,
        durationS: o.durationS,
        seed: o.seed,
        mode: o.mode,
        provisioners: o.provisioners,
        leaderKills: o.leaderKills,
        clusterRestarts: o.clusterRestarts,
        writeFaultRate: o.writeFaultRate,
        fsFailRate: o.fsFailRate,
        crashAfterProvision: o.crashAfterProvision,
        crashAfterDelete: o.crashAfterDelete,
        settleTimeoutS: o.settleTimeoutS,
      },
      workDir,
      ok: violations.length === 0,
      claims: {
        created: claims.filter((r) => r.uid).length,
        deleted: claims.filter((r) => r.deleted).length,
        surviving: survivors.length,
        retain: claims.filter((r) => r.className === RETAIN_CLASS).length,
        boundBeforeDelete: claims.filter((r) => r.deleted && r.boundTo).length,
      },
      injected: {
        apiErrorResponses,
        watchCuts: counters.watchCuts,
        compactions: counters.compactions,
        leaderKills: pool.kills,
        leaderKillsSkipped: counters.leaderKillsSkipped,
        clusterRestarts: cluster.restarts,
        fsFaults: Object.fromEntries(facts.fsFaults),
        crashes: Object.fromEntries(facts.crashes),
        crashRestarts: pool.crashRestarts,
      },
      harnessWriteErrors: workload.writeErrors,
      duplicateProvisions: facts.duplicateProvisions,
      duplicatesAfterCrash: facts.duplicatesAfterCrash,
      deletesOfMissing: facts.deletesOfMissing,
      provisionCalls: [...facts.ready.values()].reduce((n, t) => n + t.length, 0),
      settleMs,
      faultPhaseMs,
      apiRequests: audit.reduce((n, a) => n + a.count, 0),
      violations,
      unexpectedLogLines: facts.otherLines,
    };
    await fsp.writeFile(path.join(workDir, 'report.json'), JSON.stringify(report, null, 2));
    removeWorkDir = report.ok && !input.keep;
    return report;
  } finally {
    hard.abort();
    await pool.stop().catch(() => {});
    client.close();
    await cluster.stop('SIGTERM').catch(() => {});
    if (removeWorkDir) await fsp.rm(workDir, { recursive: true, force: true });
  }
}

/** Attaches the log lines mentioning each violation's volume or claim (first 20 violations, 12 lines each). */
function addEvidence(violations: Violation[], files: string[]): void {
  const texts = files.map((f) => {
    try {
      return readFileSync(f, 'utf8');
    } catch {
      return '';
    }
  });
  for (const v of violations.slice(0, 20)) {
    const needles = [v.pv, v.claim].filter((n): n is string => !!n);
    if (needles.length === 0) continue;
    const lines: string[] = [];
    texts.forEach((t, i) => {
      for (const line of t.split('\n'))
        if (needles.some((n) => line.includes(n))) lines.push(`[provisioner-${i}] ${line.slice(0, 400)}`);
    });
    v.evidence = lines.slice(-12);
  }
}
