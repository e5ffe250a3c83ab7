// explain: a decision formatted with its facts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideClaim } from '../../src/controller/claim/decide-claim.ts';
import { explainDecision, formatExplanation } from '../../src/controller/claim/explain-claim.ts';
import { resolveOptions } from '../../src/controller/options/controller-options.ts';
import { newClaim } from './fixtures.ts';

describe('explain', () => {
  it('formats a decision with its facts', () => {
    const claim = newClaim('claim-1', 'uid-1', 'missing', 'foo.bar/baz', '');
    const decision = decideClaim({
      claim,
      provisionerName: 'foo.bar/baz',
      options: resolveOptions({}, {}),
      getStorageClass: () => undefined,
      getVolume: () => undefined,
      provisioner: {},
      now: 0,
    });
    const text = formatExplanation(explainDecision({ claim, provisionerName: 'foo.bar/baz', decision }));
    assert.match(text, /Decision: wait \(StorageClassNotFound\)/);
    assert.match(text, /storage class: missing \(not found\)/);
    assert.match(text, /volume name: pvc-uid-1 \(does not exist\)/);
  });
});
