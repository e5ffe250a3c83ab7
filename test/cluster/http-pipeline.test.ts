// The API server's request pipeline (compose and its order) and the pure watch-request parser, without a server.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ClusterApiError } from '../../src/cluster/common/api-errors.ts';
import {
  compose,
  newContext,
  NextCalledTwiceError,
  type RequestContext,
  type Step,
} from '../../src/cluster/http/pipeline.ts';
import { parseWatchRequest } from '../../src/cluster/http/watch-endpoint.ts';

function context(path: string): RequestContext {
  const req = { method: 'GET', headers: {} } as unknown as IncomingMessage;
  return newContext(req, {} as ServerResponse, new URL(path, 'http://localhost'));
}

describe('request pipeline', () => {
  it('runs steps in order, around next(), and stops at a step that answers', async () => {
    const seen: string[] = [];
    const step =
      (name: string, answers = false): Step =>
      async (_ctx, next) => {
        seen.push(`${name}>`);
        if (!answers) await next();
        seen.push(`<${name}`);
      };
    await compose([step('a'), step('b', true), step('c')])(context('/api/v1/pods'));
    assert.deepEqual(seen, ['a>', 'b>', '<b', '<a']);
  });

  it('rejects a step that calls next() twice', async () => {
    const twice: Step = async (_ctx, next) => {
      await next();
      await next();
    };
    await assert.rejects(async () => compose([twice, () => {}])(context('/')), NextCalledTwiceError);
  });

  it('drops one trailing slash from the path and labels the audit with the method until routed', () => {
    const ctx = context('/api/v1/pods/');
    assert.equal(ctx.path, '/api/v1/pods');
    assert.deepEqual(ctx.auditLabel, { verb: 'get', resource: '' });
    assert.equal(context('/').path, '/');
  });
});

describe('parseWatchRequest', () => {
  const pods = { group: '', resource: 'pods' };
  it('adds metadata.name for a watch of one object and keeps the other parameters', () => {
    const w = parseWatchRequest(
      pods,
      'p1',
      new URLSearchParams('fieldSelector=spec.nodeName%3Dn1&allowWatchBookmarks=true&resourceVersion=7'),
    );
    assert.equal(w.fieldSelector, 'spec.nodeName=n1,metadata.name=p1');
    assert.equal(w.rvParam, '7');
    assert.equal(w.bookmarks, true);
    assert.equal(w.sendInitial, undefined);
  });

  it('refuses a name that contradicts the field selector, a malformed resourceVersion, a lone resourceVersionMatch', () => {
    const code = (q: string, name?: string) => {
      try {
        parseWatchRequest(pods, name, new URLSearchParams(q));
      } catch (err) {
        assert.ok(err instanceof ClusterApiError);
        return err.status.code;
      }
      return 0;
    };
    assert.equal(code('fieldSelector=metadata.name%3Dother', 'p1'), 400);
    assert.equal(code('resourceVersion=abc'), 422);
    assert.equal(code('resourceVersionMatch=NotOlderThan'), 422);
    assert.equal(code('sendInitialEvents=true&resourceVersionMatch=NotOlderThan'), 0);
  });
});
