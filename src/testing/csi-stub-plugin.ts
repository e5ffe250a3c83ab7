// A stub CSI plugin for tests: a real gRPC server (@grpc/grpc-js, loaded on start) on a unix socket in a temp
// directory, serving Identity, Controller and NodeGetInfo with src/csi's codec. By default it behaves like a small
// in-memory plugin (CreateVolume is idempotent by name, DeleteVolume forgets, ListVolumes pages); a test scripts
// the answers it needs: an error by gRPC code name on the n-th call of a method, a call that hangs until the
// caller's deadline, a reply of its own, zero capacity, topology, capabilities, a Probe that is not ready.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { sendUnaryData, Server, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { ControllerRpcType, PluginServiceType } from '../csi/descriptors.ts';
import { GRPC_CODES, type GrpcCodeName } from '../csi/grpc-status.ts';
import { serviceDefinition, type CsiService } from '../csi/services.ts';
import type { RequestOf, ResponseOf } from '../csi/services.ts';

/** The RPCs the stub serves, by their spec names. */
export type StubMethod =
  | 'GetPluginInfo'
  | 'GetPluginCapabilities'
  | 'Probe'
  | 'CreateVolume'
  | 'DeleteVolume'
  | 'ControllerGetCapabilities'
  | 'GetCapacity'
  | 'ControllerExpandVolume'
  | 'ListVolumes'
  | 'NodeGetInfo';

/**
 * What the stub answers to one call:
 * - `{ error }`: that gRPC status (by Go name: `DeadlineExceeded`, `ResourceExhausted`...), with `message`;
 * - `{ hang: true }`: no answer at all: the caller's deadline (or cancel) ends the call;
 * - `{ reply }`: that response instead of the default behaviour (CreateVolume's `volume` is still recorded);
 * - `{ after, then }`: waits for `after` to resolve, then answers `then` (default: the default behaviour).
 */
export type StubAnswer =
  | { error: GrpcCodeName; message?: string }
  | { hang: true }
  | { reply: Record<string, unknown> }
  | { after: Promise<unknown>; then?: StubAnswer };

/** One call the stub received. */
export interface StubCall {
  method: StubMethod;
  /** The decoded request. */
  request: Record<string, unknown>;
  /** 1 for the first call of this method, 2 for the second... */
  n: number;
}

/** A volume the stub holds. */
export interface StubVolume {
  volumeId: string;
  name: string;
  capacityBytes: bigint;
  parameters: Record<string, string>;
  accessibleTopology?: Array<{ segments: Record<string, string> }>;
  contentSource?: Record<string, unknown>;
}

/** How the stub starts (everything can be changed later through its fields). */
export interface StubPluginOptions {
  /** GetPluginInfo's name (default `stub.csi.kube-provisioner.io`). */
  name?: string;
  /** Plugin capabilities (default CONTROLLER_SERVICE). */
  pluginCapabilities?: PluginServiceType[];
  /** Controller capabilities (default CREATE_DELETE_VOLUME). */
  controllerCapabilities?: ControllerRpcType[];
  /** The plugin's VolumeExpansion capability (node-side expansion). */
  volumeExpansion?: 'ONLINE' | 'OFFLINE';
  /** Probe's `ready` (default true; `undefined` leaves it out of the reply, which means ready). */
  ready?: boolean | undefined;
  /** The CreateVolume reply's capacity_bytes is 0 (capacity unknown, as NFS plugins answer). */
  zeroCapacity?: boolean;
  /** accessible_topology of every created volume (default none). */
  accessibleTopology?: Array<Record<string, string>>;
  /** GetCapacity's available_capacity (default 1 TiB). */
  availableCapacity?: bigint;
  /** NodeGetInfo's answer (node_id and topology). */
  node?: { nodeId: string; topology?: Record<string, string> };
}

const SERVICES: Record<StubMethod, CsiService> = {
  GetPluginInfo: 'Identity',
  GetPluginCapabilities: 'Identity',
  Probe: 'Identity',
  CreateVolume: 'Controller',
  DeleteVolume: 'Controller',
  ControllerGetCapabilities: 'Controller',
  GetCapacity: 'Controller',
  ControllerExpandVolume: 'Controller',
  ListVolumes: 'Controller',
  NodeGetInfo: 'Node',
};

interface Rule {
  answer: StubAnswer;
  /** Only for this call number of the method. */
  call?: number;
  /** How many more calls it answers (without `call`). */
  remaining: number;
}

/** A running stub plugin. Scripted answers are consumed in the order they were added. */
export class StubCsiPlugin {
  /** The socket's path. */
  readonly socketPath: string;
  /** The address a client takes (`unix:///…`). */
  readonly address: string;
  /** Every call received, in order. */
  readonly calls: StubCall[] = [];
  /** The volumes it holds, by volume id (= the CreateVolume name). */
  readonly volumes = new Map<string, StubVolume>();
  name: string;
  pluginCapabilities: PluginServiceType[];
  controllerCapabilities: ControllerRpcType[];
  volumeExpansion: 'ONLINE' | 'OFFLINE' | undefined;
  ready: boolean | undefined;
  zeroCapacity: boolean;
  accessibleTopology: Array<Record<string, string>> | undefined;
  availableCapacity: bigint;
  /** GetCapacity's maximum_volume_size (default absent); set by tests. */
  maximumVolumeSize: bigint | undefined;
  /** GetCapacity's available_capacity per segment (by the request's accessible_topology), over availableCapacity; set by tests. */
  capacityOf: ((segment: Record<string, string>) => bigint | undefined) | undefined;
  node: { nodeId: string; topology?: Record<string, string> };
  private readonly rules = new Map<StubMethod, Rule[]>();
  private readonly counts = new Map<StubMethod, number>();

  private constructor(
    private readonly server: Server,
    private readonly dir: string,
    socketPath: string,
    o: StubPluginOptions,
  ) {
    this.socketPath = socketPath;
    this.address = `unix://${socketPath}`;
    this.name = o.name ?? 'stub.csi.kube-provisioner.io';
    this.pluginCapabilities = o.pluginCapabilities ?? ['CONTROLLER_SERVICE'];
    this.controllerCapabilities = o.controllerCapabilities ?? ['CREATE_DELETE_VOLUME'];
    this.volumeExpansion = o.volumeExpansion;
    this.ready = 'ready' in o ? o.ready : true;
    this.zeroCapacity = o.zeroCapacity ?? false;
    this.accessibleTopology = o.accessibleTopology;
    this.availableCapacity = o.availableCapacity ?? 1n << 40n;
    this.node = o.node ?? { nodeId: 'stub-node' };
  }

  /**
   * Starts a stub on a new socket in a temp directory. With `listen: false` it does not bind yet (call listen()):
   * for tests of a client that must wait for the socket to appear.
   */
  static async start(options: StubPluginOptions & { listen?: boolean } = {}): Promise<StubCsiPlugin> {
    const grpc = await import('@grpc/grpc-js');
    const dir = await mkdtemp(join(tmpdir(), 'csi-stub-'));
    const server = new grpc.Server();
    const stub = new StubCsiPlugin(server, dir, join(dir, 'csi.sock'), options);
    for (const service of ['Identity', 'Controller', 'Node'] as const)
      server.addService(serviceDefinition(service), stub.handlers(service));
    if (options.listen !== false) await stub.listen();
    return stub;
  }

  /** Binds the socket (start() does unless `listen: false`). */
  async listen(): Promise<void> {
    const grpc = await import('@grpc/grpc-js');
    await new Promise<void>((resolve, reject) =>
      this.server.bindAsync(this.address, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }

  /** Scripts `answer` for `method`: for its call number `call`, or for the next `times` calls (default 1). */
  script(method: StubMethod, answer: StubAnswer, opts: { call?: number; times?: number } = {}): this {
    const rules = this.rules.get(method) ?? [];
    rules.push({
      answer,
      ...(opts.call !== undefined ? { call: opts.call } : {}),
      remaining: opts.call !== undefined ? 1 : (opts.times ?? 1),
    });
    this.rules.set(method, rules);
    return this;
  }

  /** The requests of every call of `method`, in order. */
  requests<M extends StubMethod>(method: M): Array<Record<string, unknown>> {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  /** How many calls of `method` the stub received. */
  count(method: StubMethod): number {
    return this.counts.get(method) ?? 0;
  }

  /** Stops the server (hanging calls end) and removes the temp directory. */
  async stop(): Promise<void> {
    this.server.forceShutdown();
    await rm(this.dir, { recursive: true, force: true });
  }

  private handlers(service: CsiService): UntypedServiceImplementation {
    const out: UntypedServiceImplementation = {};
    for (const [method, s] of Object.entries(SERVICES) as Array<[StubMethod, CsiService]>) {
      if (s !== service) continue;
      out[method] = (call: ServerUnaryCall<Record<string, unknown>, unknown>, callback: sendUnaryData<unknown>) => {
        const n = (this.counts.get(method) ?? 0) + 1;
        this.counts.set(method, n);
        this.calls.push({ method, request: call.request, n });
        void this.answer(method, n, call.request, this.takeRule(method, n)).then(
          (reply) => {
            if (reply !== 'hang') callback(null, reply);
          },
          (err: { code: number; details: string }) => callback({ code: err.code, details: err.details }),
        );
      };
    }
    return out;
  }

  private takeRule(method: StubMethod, n: number): StubAnswer | undefined {
    const rules = this.rules.get(method) ?? [];
    const i = rules.findIndex((r) => (r.call !== undefined ? r.call === n : r.remaining > 0));
    if (i < 0) return undefined;
    const rule = rules[i];
    rule.remaining--;
    if (rule.remaining <= 0) rules.splice(i, 1);
    return rule.answer;
  }

  private async answer(
    method: StubMethod,
    n: number,
    request: Record<string, unknown>,
    answer: StubAnswer | undefined,
  ): Promise<unknown> {
    if (answer && 'after' in answer) {
      await answer.after;
      return this.answer(method, n, request, answer.then);
    }
    if (answer && 'error' in answer)
      throw {
        code: GRPC_CODES[answer.error],
        details: answer.message ?? `stub: scripted ${answer.error} on ${method} call ${n}`,
      };
    if (answer && 'hang' in answer) return 'hang';
    if (answer && 'reply' in answer) {
      if (method === 'CreateVolume')
        this.record(request as RequestOf<'createVolume'>, answer.reply as ResponseOf<'createVolume'>);
      return answer.reply;
    }
    return this.defaultReply(method, request);
  }

  private record(req: RequestOf<'createVolume'>, reply: ResponseOf<'createVolume'>): void {
    const v = reply.volume;
    if (!v?.volumeId) return;
    this.volumes.set(v.volumeId, {
      volumeId: v.volumeId,
      name: req.name ?? '',
      capacityBytes: v.capacityBytes ?? 0n,
      parameters: req.parameters ?? {},
    });
  }

  private defaultReply(method: StubMethod, request: Record<string, unknown>): unknown {
    switch (method) {
      case 'GetPluginInfo':
        return { name: this.name, vendorVersion: '0.0.0-stub' } satisfies ResponseOf<'getPluginInfo'>;
      case 'GetPluginCapabilities':
        return {
          capabilities: [
            ...this.pluginCapabilities.map((type) => ({ service: { type } })),
            ...(this.volumeExpansion ? [{ volumeExpansion: { type: this.volumeExpansion } }] : []),
          ],
        } satisfies ResponseOf<'getPluginCapabilities'>;
      case 'Probe':
        return (this.ready === undefined ? {} : { ready: { value: this.ready } }) satisfies ResponseOf<'probe'>;
      case 'ControllerGetCapabilities':
        return {
          capabilities: this.controllerCapabilities.map((type) => ({ rpc: { type } })),
        } satisfies ResponseOf<'controllerGetCapabilities'>;
      case 'CreateVolume':
        return { volume: this.create(request as RequestOf<'createVolume'>) } satisfies ResponseOf<'createVolume'>;
      case 'DeleteVolume':
        this.volumes.delete(String((request as RequestOf<'deleteVolume'>).volumeId ?? ''));
        return {};
      case 'GetCapacity': {
        const segment = (request as RequestOf<'getCapacity'>).accessibleTopology?.segments ?? {};
        return {
          availableCapacity: this.capacityOf?.(segment) ?? this.availableCapacity,
          ...(this.maximumVolumeSize !== undefined ? { maximumVolumeSize: { value: this.maximumVolumeSize } } : {}),
        } satisfies ResponseOf<'getCapacity'>;
      }
      case 'ControllerExpandVolume': {
        const req = request as RequestOf<'controllerExpandVolume'>;
        const v = this.volumes.get(req.volumeId ?? '');
        if (!v) throw { code: GRPC_CODES.NotFound, details: `volume ${req.volumeId ?? ''} not found` };
        v.capacityBytes = req.capacityRange?.requiredBytes ?? v.capacityBytes;
        return {
          capacityBytes: v.capacityBytes,
          nodeExpansionRequired: false,
        } satisfies ResponseOf<'controllerExpandVolume'>;
      }
      case 'ListVolumes':
        return this.list(request as RequestOf<'listVolumes'>);
      case 'NodeGetInfo':
        return {
          nodeId: this.node.nodeId,
          ...(this.node.topology ? { accessibleTopology: { segments: this.node.topology } } : {}),
        } satisfies ResponseOf<'nodeGetInfo'>;
    }
  }

  private create(req: RequestOf<'createVolume'>): NonNullable<ResponseOf<'createVolume'>['volume']> {
    const name = req.name ?? '';
    if (!name) throw { code: GRPC_CODES.InvalidArgument, details: 'name is required' };
    const existing = this.volumes.get(name);
    const volume: StubVolume = existing ?? {
      volumeId: name,
      name,
      capacityBytes: req.capacityRange?.requiredBytes ?? 0n,
      parameters: req.parameters ?? {},
      ...(this.accessibleTopology
        ? { accessibleTopology: this.accessibleTopology.map((segments) => ({ segments })) }
        : {}),
      ...(req.volumeContentSource ? { contentSource: req.volumeContentSource as Record<string, unknown> } : {}),
    };
    this.volumes.set(name, volume);
    return {
      volumeId: volume.volumeId,
      capacityBytes: this.zeroCapacity ? 0n : volume.capacityBytes,
      volumeContext: { 'stub/created-by': 'stub' },
      ...(volume.accessibleTopology ? { accessibleTopology: volume.accessibleTopology } : {}),
      ...(volume.contentSource ? { contentSource: volume.contentSource } : {}),
    };
  }

  private list(req: RequestOf<'listVolumes'>): ResponseOf<'listVolumes'> {
    const all = [...this.volumes.values()].sort((a, b) =>
      a.volumeId < b.volumeId ? -1 : a.volumeId > b.volumeId ? 1 : 0,
    );
    const start = req.startingToken ? Number(req.startingToken) : 0;
    if (!Number.isInteger(start) || start < 0 || start > all.length)
      throw { code: GRPC_CODES.Aborted, details: `invalid starting_token ${req.startingToken}` };
    const max = req.maxEntries && req.maxEntries > 0 ? req.maxEntries : all.length;
    const page = all.slice(start, start + max);
    const next = start + page.length < all.length ? String(start + page.length) : '';
    return {
      entries: page.map((v) => ({ volume: { volumeId: v.volumeId, capacityBytes: v.capacityBytes } })),
      ...(next ? { nextToken: next } : {}),
    };
  }
}
