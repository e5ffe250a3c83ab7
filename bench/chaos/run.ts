// `npm run chaos -- --claims N --duration S --seed X --mode lease|per-claim [--keep] [--json FILE]`: one chaos run
// (see harness.ts), a summary on stdout, exit code 1 when an invariant was violated (with the report naming
// the claim or volume and the log lines about it).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runChaos, type ChaosReport } from './harness.ts';

const USAGE = `usage: npm run chaos -- [options]
  --claims N              claims created during the fault phase (default 300)
  --duration S            length of the fault phase in seconds (default 120)
  --seed X                seed of every decision, including the cluster's fault draws (default 1)
  --mode lease|per-claim  leader election mode of the provisioner replicas (default lease)
  --leader-kills N        replica kills (default one per 25 s)
  --cluster-restarts N    cluster process restarts (default 3)
  --settle-timeout S      time allowed to settle after the faults (default 180)
  --keep                  keep the work directory (always kept when an invariant fails)
  --json FILE             write the full report as JSON
  --provisioner-arg=ARG   extra flag for every replica (repeatable)
Write faults: 500, 429, 409 and 504 before the write, and lost responses (the write applied, then a 504 or a
reset connection), in equal shares of 5 % of API writes.
`;

function summary(r: ChaosReport): string {
  const lines = [
    `chaos run (${r.options.mode}, seed ${r.options.seed}): ${r.ok ? 'OK, 0 invariant violations' : `${r.violations.length} INVARIANT VIOLATIONS`}`,
    `  claims: ${r.claims.created} created, ${r.claims.deleted} deleted (${r.claims.boundBeforeDelete} seen Bound first), ${r.claims.surviving} surviving, ${r.claims.retain} Retain`,
    `  fault phase ${Math.round(r.faultPhaseMs / 1000)} s, settled in ${Math.round(r.settleMs / 1000)} s, ${r.apiRequests} API requests`,
    `  injected: API write errors ${JSON.stringify(r.injected.apiErrorResponses)}, watch cuts ${r.injected.watchCuts}, compactions ${r.injected.compactions}`,
    `            replica kills ${r.injected.leaderKills} (skipped ${r.injected.leaderKillsSkipped}), cluster restarts ${r.injected.clusterRestarts}`,
    `            fs faults ${JSON.stringify(r.injected.fsFaults)}, self-crashes ${JSON.stringify(r.injected.crashes)} (restarts after crash ${r.injected.crashRestarts})`,
    `  provision() results ${r.provisionCalls}, duplicates ${r.duplicateProvisions} (${r.duplicatesAfterCrash} right after an injected crash); delete() of an already-gone directory ${r.deletesOfMissing}`,
    `  work dir: ${r.workDir}`,
  ];
  for (const v of r.violations.slice(0, 50)) {
    lines.push(`  VIOLATION ${v.invariant}: claim ${v.claim ?? '-'} pv ${v.pv ?? '-'}: ${v.detail}`);
    for (const e of v.evidence ?? []) lines.push(`      ${e}`);
  }
  if (r.unexpectedLogLines.length > 0)
    lines.push(
      `  non-JSON log lines (first ${r.unexpectedLogLines.length}):`,
      ...r.unexpectedLogLines.map((l) => `      ${l}`),
    );
  return lines.join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      claims: { type: 'string', default: '300' },
      duration: { type: 'string', default: '120' },
      seed: { type: 'string', default: '1' },
      mode: { type: 'string', default: 'lease' },
      'leader-kills': { type: 'string' },
      'cluster-restarts': { type: 'string' },
      'settle-timeout': { type: 'string' },
      keep: { type: 'boolean', default: false },
      json: { type: 'string' },
      'provisioner-arg': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const mode = values.mode;
  if (mode !== 'lease' && mode !== 'per-claim') throw new Error(`--mode must be lease or per-claim, not ${mode}`);
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const report = await runChaos({
    claims: Number(values.claims),
    durationS: Number(values.duration),
    seed: Number(values.seed),
    mode,
    leaderKills: num(values['leader-kills']),
    clusterRestarts: num(values['cluster-restarts']),
    settleTimeoutS: num(values['settle-timeout']),
    keep: values.keep,
    provisionerArgs: values['provisioner-arg'],
    log: (line) => process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
  });
  process.stdout.write(`${summary(report)}\n`);
  if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
  return report.ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`chaos run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
