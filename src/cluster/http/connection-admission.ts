// Admission of connections to the API server, before any request on them is authenticated. Two defences against
// a local process that opens connections without a token and never finishes them:
// - ConnectionGuard keeps unauthenticated connections under their cap by closing the *oldest*, so the newest
//   (the legitimate client, which authenticates within a few round trips) is never the one refused; the cap is
//   large (request-limits.ts), since an attacker re-opens what is closed and its churn, not what it holds, is
//   what delays legitimate clients; connections before and after their ClientHello are capped apart, so idle
//   ones never push out one whose key exchange the server has already paid;
// - admitConnections hands a TLS connection to the TLS layer only once its first record (the ClientHello) is
//   complete, so a connection that never speaks costs a socket and a timer, not a TLS session, and the attacker's
//   churn (each closed connection is re-opened at once) stays cheap enough not to starve the legitimate clients.
// The accept queue is made deep for the same reason: see LISTEN_BACKLOG.
import type { Server, Socket } from 'node:net';

/**
 * listen(2) backlog of the API server (the kernel clamps it to net.core.somaxconn). With Node's default (511) a
 * flood of re-opened connections overflows the accept queue, the kernel drops a legitimate client's handshake and
 * that client waits for TCP's retransmission (1 s, then 3 s): measured as `ListenOverflows` under the lockout test.
 */
export const LISTEN_BACKLOG = 4096;

/** TLS record content type of a handshake record (RFC 8446 5.1); a ClientHello travels in one. */
const TLS_HANDSHAKE_RECORD = 0x16;
const TLS_RECORD_HEADER_BYTES = 5;

/**
 * Takes over `server`'s 'connection' listeners (Node's TLS or HTTP connection handling): every new connection is
 * first admitted by `guard`; with TLS it is handed over once its first TLS record is complete (at most one record,
 * 16 KiB, is held), and closed if that takes longer than `helloTimeoutMs`. Without TLS it is handed over at once.
 */
export function admitConnections(
  server: Server,
  guard: ConnectionGuard,
  opts: { tls: boolean; helloTimeoutMs: number },
): void {
  const handlers = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const handOver = (socket: Socket) => {
    for (const handler of handlers) handler.call(server, socket);
  };
  server.on('connection', (socket: Socket) => {
    guard.admit(socket);
    if (socket.destroyed) return;
    if (!opts.tls) return handOver(socket);
    let held: Buffer | undefined;
    const onData = (chunk: Buffer) => {
      held = held ? Buffer.concat([held, chunk]) : chunk;
      if (!firstRecordComplete(held)) return;
      socket.off('data', onData);
      socket.setTimeout(0);
      socket.pause();
      // The TLS layer reads what is buffered on the socket before the rest.
      socket.unshift(held);
      guard.handingOver(socket);
      handOver(socket);
    };
    socket.setTimeout(opts.helloTimeoutMs, () => socket.destroy());
    socket.on('data', onData);
  });
}

/** Whether `bytes` hold a whole first TLS record, or are not TLS at all (which the TLS layer then refuses). */
function firstRecordComplete(bytes: Buffer): boolean {
  if (bytes[0] !== TLS_HANDSHAKE_RECORD) return true;
  if (bytes.length < TLS_RECORD_HEADER_BYTES) return false;
  // A length past TLS's 2^14 + 2048 limit is handed over too, and refused there.
  return bytes.length >= TLS_RECORD_HEADER_BYTES + bytes.readUInt16BE(3);
}

/**
 * Counts connections that have not authenticated yet and keeps them under `max` in each of two stages: waiting
 * for their ClientHello (a socket and a timer), and past it (in the TLS handshake, whose key exchange the server
 * has paid, or sending their first request). Past the cap the oldest connection of the stage is closed, never the
 * newest: an attacker holding connections open cannot refuse a legitimate client, whose connection authenticates
 * within a few round trips of arriving and so is always among the youngest. The stages are capped apart so that
 * churning cheap idle connections never closes one that would cost another key exchange once re-opened. The
 * victim comes from the source address holding the most connections of the stage, so an attacker on one address
 * evicts its own connections before anyone else's (on loopback every client shares 127.0.0.1, and the order of
 * arrival alone protects the legitimate ones). A connection leaves the count at its first authenticated request
 * or when it closes; the handshake and header timeouts still close the ones nobody evicts.
 */
export class ConnectionGuard {
  /** Connections waiting for their ClientHello (all of them without TLS). */
  private readonly waiting = new Stage();
  /** Connections handed to the TLS layer, not yet authenticated. */
  private readonly inTls = new Stage();
  /** Keyed by remote address and port: the TLS socket a request arrives on wraps the TCP socket admitted here. */
  private readonly byPeer = new Map<string, Admitted>();
  /** Request sockets that already carried an authenticated request. */
  private readonly seen = new WeakSet<object>();
  private openCount = 0;
  private evictedCount = 0;
  private handshakeCount = 0;

  constructor(private readonly max: number) {}

  /** Called for every new TCP connection; past the cap, closes the oldest connection waiting for its ClientHello. */
  admit(socket: Socket): void {
    // Already closed by the peer: nothing to keep.
    if (socket.remoteAddress === undefined) return void socket.destroy();
    const admitted: Admitted = { socket, source: socket.remoteAddress, peer: peerOf(socket), stage: this.waiting };
    this.openCount++;
    socket.once('close', () => {
      this.openCount--;
      this.forget(admitted);
    });
    // A peer key still held by a socket that has not reported its close yet: that one is gone.
    const stale = this.byPeer.get(admitted.peer);
    if (stale) this.forget(stale);
    this.byPeer.set(admitted.peer, admitted);
    this.waiting.add(admitted);
    this.enforce(this.waiting);
  }

  /**
   * The connection's ClientHello is complete and goes to the TLS layer, which pays a key exchange for it: it moves
   * to the second stage; past the cap there, the oldest connection of that stage is closed.
   */
  handingOver(socket: Socket): void {
    this.handshakeCount++;
    const admitted = this.byPeer.get(peerOf(socket));
    if (!admitted || admitted.socket !== socket) return;
    admitted.stage.delete(admitted);
    admitted.stage = this.inTls;
    this.inTls.add(admitted);
    this.enforce(this.inTls);
  }

  /** The connection carried an authenticated request. */
  authenticated(socket: Socket | null | undefined): void {
    // A keep-alive connection's later requests skip the peer key (a string built per call) and its lookup.
    if (!socket || this.seen.has(socket)) return;
    this.seen.add(socket);
    const admitted = this.byPeer.get(peerOf(socket));
    if (admitted) this.forget(admitted);
  }

  get unauthenticated(): number {
    return this.byPeer.size;
  }

  get open(): number {
    return this.openCount;
  }

  /** Unauthenticated connections closed to make room for newer ones. */
  get evicted(): number {
    return this.evictedCount;
  }

  /** TLS connections handed to the TLS layer (each a key exchange the server pays). */
  get handshakes(): number {
    return this.handshakeCount;
  }

  /** Closes every unauthenticated connection (the server is shutting down). */
  closeAll(): void {
    for (const admitted of [...this.byPeer.values()]) admitted.socket.destroy();
  }

  private forget(admitted: Admitted): void {
    if (this.byPeer.get(admitted.peer) === admitted) this.byPeer.delete(admitted.peer);
    admitted.stage.delete(admitted);
  }

  private enforce(stage: Stage): void {
    while (stage.size > this.max) {
      const oldest = stage.oldestOfHeaviest();
      if (!oldest) return;
      this.forget(oldest);
      this.evictedCount++;
      oldest.socket.destroy();
    }
  }
}

/** One stage's connections: per source address, oldest first (a Set keeps insertion order). */
class Stage {
  private readonly bySource = new Map<string, Set<Admitted>>();
  size = 0;

  add(admitted: Admitted): void {
    let queue = this.bySource.get(admitted.source);
    if (!queue) this.bySource.set(admitted.source, (queue = new Set()));
    queue.add(admitted);
    this.size++;
  }

  delete(admitted: Admitted): void {
    const queue = this.bySource.get(admitted.source);
    if (!queue?.delete(admitted)) return;
    this.size--;
    if (queue.size === 0) this.bySource.delete(admitted.source);
  }

  /** The oldest connection of the source with the largest share (at most `max` + 1 sources to look at). */
  oldestOfHeaviest(): Admitted | undefined {
    let heaviest: Set<Admitted> | undefined;
    for (const queue of this.bySource.values()) if (!heaviest || queue.size > heaviest.size) heaviest = queue;
    return heaviest?.values().next().value;
  }
}

/** One unauthenticated connection as the guard tracks it. */
interface Admitted {
  readonly socket: Socket;
  readonly source: string;
  readonly peer: string;
  stage: Stage;
}

function peerOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}
