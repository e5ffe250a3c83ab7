// Hostile inputs that must get kube-apiserver's answers (issue 20, defect 10):
// - a list continue token whose resourceVersion is ahead of the server's: 504 "Too large resource version", as
//   etcd3 store GetList answers etcd's ErrFutureRev (it was served as the latest state, with 200), up to int64's
//   largest rv in its exact digits (it was a 400), and Go's int64 decoding error past it;
// - a get of one object at a future resourceVersion: the watch cache's 504 "Too large resource version" (it was
//   answered with the latest object, 200);
// - a Secret stringData key `__proto__`: merged into data as any other key (it set the prototype of the merged
//   map, so the key vanished);
// - a protobuf body with a map key `__proto__`: a plain key, as JSON keeps it (it set the object's prototype, so
//   the label vanished and an invalid label was accepted with 201; JSON answers 422);
// - the data directory's lock path as a dangling symlink or a directory: start-up stops with a message naming the
//   path and what to do (it was a raw EEXIST / EISDIR), and nothing the lock did not create is removed.
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import { DataDirLockPathError, LOCK_FILE, lockDataDir } from '../../src/cli/data-dir-lock.ts';
import { call, type Endpoint } from './raw-http.ts';

/** A continue token as kube-apiserver encodes it: base64url JSON {"v","rv","start"}. */
const continueToken = (rv: number, start: string) => rawContinueToken(String(rv), start);
/** The same with the rv written as given: digits JavaScript numbers cannot hold exactly. */
const rawContinueToken = (rvLiteral: string, start: string) =>
  Buffer.from(`{"v":"meta.k8s.io/v1","rv":${rvLiteral},"start":${JSON.stringify(start)}}`).toString('base64url');

// A minimal protobuf encoder: varint keys, length-delimited messages and strings.
const varint = (n: number): Buffer => {
  const out: number[] = [];
  let v = n;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
};
const msg = (no: number, ...parts: Buffer[]): Buffer => {
  const payload = Buffer.concat(parts);
  return Buffer.concat([varint((no << 3) | 2), varint(payload.length), payload]);
};
const str = (no: number, s: string): Buffer => msg(no, Buffer.from(s));
const envelope = (apiVersion: string, kind: string, body: Buffer): Buffer =>
  Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), msg(1, str(1, apiVersion), str(2, kind)), msg(2, body)]);
const PB = 'application/vnd.kubernetes.protobuf';

describe('answers kube-apiserver gives to hostile API requests', () => {
  let c: EmbeddedCluster;
  let e: Endpoint;
  before(async () => {
    c = await startEmbeddedCluster({ controllers: false });
    e = { url: c.url, token: c.token, caPem: c.caPem };
  });
  after(() => c.stop());

  it('a continue token from the future gets 504 Timeout "Too large resource version" with the ResourceVersionTooLarge cause', async () => {
    for (const name of ['a', 'b', 'c'])
      assert.equal(
        (
          await call(e, 'POST', '/api/v1/namespaces/default/configmaps', {
            body: JSON.stringify({ metadata: { name } }),
          })
        ).status,
        201,
      );
    const first = await call(e, 'GET', '/api/v1/namespaces/default/configmaps?limit=1');
    assert.equal(first.status, 200);
    const current = Number(first.json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion);
    const future = current + 1_000_000;
    const r = await call(
      e,
      'GET',
      `/api/v1/namespaces/default/configmaps?limit=1&continue=${continueToken(future, '/default/a')}`,
    );
    assert.equal(r.status, 504, r.text);
    const status = r.json<{
      reason: string;
      message: string;
      code: number;
      details: { causes: Array<{ reason: string; message: string }>; retryAfterSeconds?: number };
    }>();
    assert.equal(status.reason, 'Timeout');
    assert.equal(status.code, 504);
    assert.match(status.message, new RegExp(`^Timeout: Too large resource version: ${future}, current: \\d+$`));
    assert.deepEqual(status.details.causes, [
      { reason: 'ResourceVersionTooLarge', message: 'Too large resource version' },
    ]);
    // The token of the current list still pages on.
    const token = first.json<{ metadata: { continue: string } }>().metadata.continue;
    assert.equal((await call(e, 'GET', `/api/v1/namespaces/default/configmaps?limit=1&continue=${token}`)).status, 200);
  });

  it('a continue token with an rv at or past int64: 504 too large up to int64 (its exact digits), 400 past it, as Go decodes rv', async () => {
    const CMS = '/api/v1/namespaces/default/configmaps?limit=1&continue=';
    for (const rv of ['9223372036854775807', '9007199254740993']) {
      const r = await call(e, 'GET', CMS + rawContinueToken(rv, '/default/a'));
      assert.equal(r.status, 504, `${rv}: ${r.text}`);
      const status = r.json<{ message: string; details: { causes: Array<{ reason: string }> } }>();
      // The digits as sent, not a double's rounding (9223372036854775808).
      assert.match(status.message, new RegExp(`^Timeout: Too large resource version: ${rv}, current: \\d+$`));
      assert.deepEqual(
        status.details.causes.map((c) => c.reason),
        ['ResourceVersionTooLarge'],
      );
    }
    // Past int64, encoding/json refuses the number for the int64 field: DecodeContinue's error, a 400.
    for (const rv of ['9223372036854775808', '123456789012345678901234567890', '-9223372036854775809']) {
      const r = await call(e, 'GET', CMS + rawContinueToken(rv, '/default/a'));
      assert.equal(r.status, 400, `${rv}: ${r.text}`);
      assert.equal(
        r.json<{ message: string }>().message,
        `invalid continue token: continue key is not valid: json: cannot unmarshal number ${rv} into Go struct field continueToken.rv of type int64`,
      );
    }
    // A negative int64 other than -1 is "the latest", as etcd3 GetList reads any rv < 0.
    const latest = await call(e, 'GET', CMS + rawContinueToken('-9223372036854775808', '/default/a'));
    assert.equal(latest.status, 200, latest.text);
  });

  it('a get of one object at a resourceVersion ahead of the server: 504 too large, as the watch cache answers', async () => {
    const created = await call(e, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: JSON.stringify({ metadata: { name: 'future-get' } }),
    });
    assert.equal(created.status, 201, created.text);
    const rv = Number(created.json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion);
    const at = (v: string, name = 'future-get') =>
      call(e, 'GET', `/api/v1/namespaces/default/configmaps/${name}?resourceVersion=${v}`);
    // At or below the current resourceVersion (and 0, "any"): the object.
    for (const v of ['0', String(rv)]) assert.equal((await at(v)).status, 200, v);
    for (const [v, name] of [
      [String(rv + 1_000_000), 'future-get'],
      ['9223372036854775807', 'future-get'],
      // The wait for the cache comes before the lookup: an absent object is a 504 too, not a 404.
      [String(rv + 1_000_000), 'absent'],
    ] as const) {
      const r = await at(v, name);
      assert.equal(r.status, 504, `${v} ${name}: ${r.text}`);
      const status = r.json<{
        reason: string;
        message: string;
        details: { causes: Array<{ reason: string; message: string }>; retryAfterSeconds?: number };
      }>();
      assert.equal(status.reason, 'Timeout');
      assert.match(status.message, new RegExp(`^Timeout: Too large resource version: ${v}, current: \\d+$`));
      assert.deepEqual(status.details.causes, [
        { reason: 'ResourceVersionTooLarge', message: 'Too large resource version' },
      ]);
      // The watch cache's resourceVersionTooHighRetrySeconds.
      assert.equal(status.details.retryAfterSeconds, 1);
    }
    // Past uint64 the versioner's ParseUint fails: the storage InvalidError, a plain 500, as for garbage.
    const outOfRange = await at('18446744073709551616');
    assert.equal(outOfRange.status, 500, outOfRange.text);
    assert.equal(
      outOfRange.json<{ message: string }>().message,
      'resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range',
    );
  });

  it('a Secret stringData key __proto__ becomes data.__proto__, through JSON and protobuf, on create and update', async () => {
    const SECRETS = '/api/v1/namespaces/default/secrets';
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    const created = await call(e, 'POST', SECRETS, {
      body:
        '{"metadata":{"name":"proto-string-data"},"data":{"k":"' +
        b64('old') +
        '"},"stringData":{"__proto__":"x","k":"v"}}',
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(JSON.parse(created.text).data, { k: b64('v'), ['__proto__']: b64('x') });
    assert.ok(created.text.includes(`"__proto__":"${b64('x')}"`), created.text);
    // stringData overwrites a data key __proto__ as it overwrites any other.
    const updated = await call(e, 'PUT', `${SECRETS}/proto-string-data`, {
      body: `{"metadata":{"name":"proto-string-data"},"data":{"__proto__":"${b64('old')}"},"stringData":{"__proto__":"new"}}`,
    });
    assert.equal(updated.status, 200, updated.text);
    assert.ok(updated.text.includes(`"data":{"__proto__":"${b64('new')}"}`), updated.text);
    const viaPb = await call(e, 'POST', SECRETS, {
      body: envelope(
        'v1',
        'Secret',
        Buffer.concat([msg(1, str(1, 'pb-proto-string-data')), msg(4, str(1, '__proto__'), str(2, 'x'))]),
      ),
      contentType: PB,
    });
    assert.equal(viaPb.status, 201, viaPb.text);
    assert.ok(viaPb.text.includes(`"data":{"__proto__":"${b64('x')}"}`), viaPb.text);
  });

  it('a protobuf map key __proto__ is a plain key, as JSON keeps it: an invalid label as in JSON, a data key kept', async () => {
    const CMS = '/api/v1/namespaces/default/configmaps';
    const pb = (name: string, ...parts: Buffer[]) =>
      call(e, 'POST', CMS, {
        body: envelope('v1', 'ConfigMap', Buffer.concat([msg(1, str(1, name), ...parts)])),
        contentType: PB,
      });
    const label = (k: string, v: string) => msg(11, str(1, k), str(2, v));
    // A label key `__proto__` is not a qualified name: the same 422 through protobuf as through JSON, not a
    // created object without the label.
    const viaPb = await pb('pb-proto-label', label('__proto__', 'x'), label('app', 'y'));
    const viaJson = await call(e, 'POST', CMS, {
      body: '{"metadata":{"name":"pb-proto-label","labels":{"__proto__":"x","app":"y"}}}',
    });
    assert.equal(viaJson.status, 422, viaJson.text);
    assert.equal(viaPb.status, 422, viaPb.text);
    assert.equal(viaPb.json<{ message: string }>().message, viaJson.json<{ message: string }>().message);
    assert.match(viaPb.text, /metadata\.labels: Invalid value: \\"__proto__\\"/);
    // A data key `__proto__` is a valid ConfigMap key: kept, through protobuf and JSON alike.
    const withData = await call(e, 'POST', CMS, {
      body: envelope(
        'v1',
        'ConfigMap',
        Buffer.concat([
          msg(1, str(1, 'pb-proto-data2')),
          msg(2, str(1, '__proto__'), str(2, 'value')),
          msg(2, str(1, 'k'), str(2, 'v')),
        ]),
      ),
      contentType: PB,
    });
    assert.equal(withData.status, 201, withData.text);
    assert.ok(withData.text.includes('"data":{"__proto__":"value","k":"v"}'), withData.text);
    const dataJson = await call(e, 'POST', CMS, {
      body: '{"metadata":{"name":"json-proto-data"},"data":{"__proto__":"value","k":"v"}}',
    });
    assert.equal(dataJson.status, 201, dataJson.text);
    assert.ok(dataJson.text.includes('"data":{"__proto__":"value","k":"v"}'), dataJson.text);
  });
});

describe('the data directory lock path taken by something else', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kp-lockpath-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('a dangling symlink: a message naming the path and what to do; the link is left alone', async () => {
    const dataDir = join(dir, 'dangling');
    await mkdir(dataDir);
    await symlink(join(dir, 'nowhere'), join(dataDir, LOCK_FILE));
    const err = await lockDataDir(dataDir, 'dev').then(
      () => undefined,
      (x: unknown) => x,
    );
    assert.ok(err instanceof DataDirLockPathError, String(err));
    assert.ok(err.message.includes(join(dataDir, LOCK_FILE)), err.message);
    assert.match(err.message, /symbolic link/);
    assert.match(err.message, /remove it/);
    assert.doesNotMatch(err.message, /EEXIST/);
    assert.ok((await lstat(join(dataDir, LOCK_FILE))).isSymbolicLink(), 'the link is not ours to remove');
    assert.deepEqual(await readdir(dataDir), [LOCK_FILE], 'no temporary file left behind');
  });

  it('a directory: a message naming the path and what to do; the directory is left alone', async () => {
    const dataDir = join(dir, 'directory');
    await mkdir(join(dataDir, LOCK_FILE), { recursive: true });
    const err = await lockDataDir(dataDir, 'cluster').then(
      () => undefined,
      (x: unknown) => x,
    );
    assert.ok(err instanceof DataDirLockPathError, String(err));
    assert.ok(err.message.includes(join(dataDir, LOCK_FILE)), err.message);
    assert.match(err.message, /is a directory/);
    assert.match(err.message, /remove it/);
    assert.doesNotMatch(err.message, /EISDIR|EEXIST/);
    assert.ok((await lstat(join(dataDir, LOCK_FILE))).isDirectory());
    assert.deepEqual(await readdir(dataDir), [LOCK_FILE], 'no temporary file left behind');
  });
});
