// A short chaos run in CI (about a minute, fixed seed, lease mode): the embedded cluster and three hostpath
// provisioner processes with failing API writes, watch cuts, compaction, leader kills, cluster restarts,
// mkdir/rm failures and crashes between provision() and the PV save; then every invariant of
// bench/chaos/invariants.ts must hold. `npm run chaos` runs the long version (docs/reliability.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../bench/chaos/harness.ts';

test(
  'chaos run (lease, seed 20261129): no lost claim, no leak, no double delete, nothing outside the roots',
  { timeout: 240_000 },
  async () => {
    const report = await runChaos({
      claims: 60,
      durationS: 35,
      seed: 20261129,
      mode: 'lease',
      leaderKills: 2,
      clusterRestarts: 2,
      settleTimeoutS: 90,
    });
    const details = report.violations
      .slice(0, 10)
      .map(
        (v) =>
          `${v.invariant} claim=${v.claim ?? '-'} pv=${v.pv ?? '-'}: ${v.detail}\n  ${(v.evidence ?? []).join('\n  ')}`,
      );
    assert.deepEqual(details, [], `work dir kept: ${report.workDir}`);
    assert.ok(report.claims.created >= 50, `only ${report.claims.created} claims created`);
    assert.ok(
      report.injected.clusterRestarts >= 2 && report.injected.leaderKills >= 1,
      JSON.stringify(report.injected),
    );
    assert.ok(
      Object.values(report.injected.apiErrorResponses).reduce((a, b) => a + b, 0) > 0,
      'API faults were injected',
    );
  },
);
