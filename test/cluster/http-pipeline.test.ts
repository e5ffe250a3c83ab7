// The API server's request pipeline (compose and its order) and the pure watch-request parser, without a server.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ClusterApiError } from '../../src/cluster/common/api-errors.ts';
import {
  compose,
  newContext,
  NextCalledTwiceError,
  requestPath,
  type RequestContext,
  type Step,
} from '../../src/cluster/http/pipeline.ts';
import { matchRoute, ResourceIndex, type Route } from '../../src/cluster/http/routing.ts';
import { RESOURCES } from '../../src/cluster/registry/registry.ts';
import { parseWatchRequest } from '../../src/cluster/http/watch-endpoint.ts';

const index = new ResourceIndex(RESOURCES);

function context(target: string, method = 'GET'): RequestContext {
  const req = { method, headers: {} } as unknown as IncomingMessage;
  const url = new URL(target, 'http://localhost');
  const path = requestPath(url);
  return newContext(req, {} as ServerResponse, url, path, matchRoute(index, method, path, url.searchParams));
}

/** The route of a request, in a few words. */
function routeOf(target: string, method = 'GET'): string {
  const route: Route = context(target, method).route;
  switch (route.kind) {
    case 'discovery':
      return `discovery ${Object.values(route.document).join(' ')}`;
    case 'resource':
    case 'podLog': {
      const r = route.request;
      return `${route.kind} ${r.verb} ${r.rt.resource} ${r.namespace ?? '-'} ${r.name ?? '-'} ${r.subresource ?? '-'}`;
    }
    case 'notFound':
      return route.drain ? 'notFound drain' : 'notFound';
    default:
      return route.kind;
  }
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

  it('drops one trailing slash from the path and labels the audit with the routed verb and resource', () => {
    const ctx = context('/api/v1/pods/');
    assert.equal(ctx.path, '/api/v1/pods');
    assert.deepEqual(ctx.auditLabel, { verb: 'list', resource: 'pods' });
    assert.equal(context('/').path, '/');
    assert.deepEqual(context('/api/v1/namespaces/a/pods/p/status', 'PATCH').auditLabel, {
      verb: 'patch',
      resource: 'pods/status',
    });
    assert.deepEqual(context('/admin/audit', 'DELETE').auditLabel, { verb: 'delete', resource: 'admin' });
    assert.deepEqual(context('/nowhere', 'POST').auditLabel, { verb: 'post', resource: '' });
  });
});

describe('matchRoute: one routing per request', () => {
  it('sends health and admin paths to their routes, whatever the method', () => {
    assert.equal(routeOf('/healthz'), 'health');
    assert.equal(routeOf('/readyz/', 'POST'), 'health');
    assert.equal(routeOf('/admin/faults/3', 'DELETE'), 'admin');
    assert.equal(routeOf('/admin/'), 'notFound');
  });

  it('matches discovery documents for GET only, and only for served groups and versions', () => {
    assert.equal(routeOf('/version'), 'discovery version');
    assert.equal(routeOf('/api'), 'discovery apiVersions');
    assert.equal(routeOf('/apis/'), 'discovery groupList');
    assert.equal(routeOf('/api/v1'), 'discovery resourceList v1');
    assert.equal(routeOf('/apis/storage.k8s.io'), 'discovery group storage.k8s.io');
    assert.equal(routeOf('/apis/storage.k8s.io/v1'), 'discovery resourceList storage.k8s.io/v1');
    assert.equal(routeOf('/openapi/v3'), 'discovery openApiPaths');
    assert.equal(routeOf('/openapi/v3/apis/apps/v1'), 'discovery openApiGroupVersion apis/apps/v1');
    assert.equal(routeOf('/openapi/v3/apis/nope/v1'), 'notFound');
    assert.equal(routeOf('/apis/nope'), 'notFound');
    assert.equal(routeOf('/api/v2'), 'notFound');
    // An empty segment is not a discovery path: it is routed (and refused) as a resource path.
    assert.equal(routeOf('/api//v1'), 'notFound drain');
    assert.equal(routeOf('/api/v1', 'POST'), 'notFound drain');
    assert.equal(routeOf('/api', 'POST'), 'notFound');
  });

  it('resolves resource requests, the watch forms, pods/log and the refusals', () => {
    assert.equal(routeOf('/api/v1/namespaces/a/pods/p'), 'resource get pods a p -');
    assert.equal(routeOf('/api/v1/persistentvolumes', 'POST'), 'resource create persistentvolumes - - -');
    assert.equal(routeOf('/api/v1/persistentvolumes?watch=1'), 'resource watch persistentvolumes - - -');
    assert.equal(routeOf('/api/v1/watch/persistentvolumes'), 'resource watch persistentvolumes - - -');
    assert.equal(routeOf('/api/v1/namespaces/a/pods/p/log'), 'podLog get pods a p log');
    assert.equal(routeOf('/api/v1/namespaces/a/widgets'), 'notFound drain');
    assert.equal(routeOf('/api/v1/persistentvolumes/pv1', 'POST'), 'methodNotAllowed');
    assert.equal(routeOf('/metrics'), 'notFound');
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
