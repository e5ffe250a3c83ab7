// A token-less attacker, run as its own process by api-hostile-lockout.test.ts: it holds `count` connections to
// the API server and re-opens each one as soon as the server closes it. A third never send a byte (idle TCP), a
// third send half a TLS record and stop (no handshake), a third finish the handshake and trickle request headers
// that never end (slow headers). Kind `hello` replays one complete ClientHello (recorded once, so the attacker pays
// no cryptography) and never answers the server's flight. Every 200 ms it prints one JSON line:
// {"opened","closed","open","ready"} (ready: connections in their holding state).
// Usage: node --import tsx lockout-attacker.ts <host> <port> <count> [kinds, comma-separated]
import net from 'node:net';
import tls from 'node:tls';

const [host = '127.0.0.1', portText = '0', countText = '1000', kindsText = 'idle,half-hello,slow-headers,hello'] =
  process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
let opened = 0;
let closed = 0;
let open = 0;
/** Connections in their holding state: connected and, per kind, the bytes sent or the handshake done. */
let ready = 0;
let stopping = false;

type Kind = 'idle' | 'half-hello' | 'slow-headers' | 'hello';
const KINDS = kindsText.split(',') as Kind[];

function connect(kind: Kind): void {
  if (stopping) return;
  const socket: net.Socket =
    kind === 'slow-headers'
      ? tls.connect({ host, port, rejectUnauthorized: false }, () => {
          socket.write('GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\n');
          markReady(socket);
          trickle(socket);
        })
      : net.connect({ host, port }, () => {
          // A TLS record header announcing a handshake message that never arrives.
          if (kind === 'half-hello') socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
          else if (kind === 'hello') {
            socket.write(clientHello);
            // The server's flight is read and dropped, so its close is seen (and the connection re-opened) at once.
            socket.resume();
          }
          markReady(socket);
        });
  opened++;
  open++;
  socket.on('error', () => {});
  socket.once('close', () => {
    closed++;
    open--;
    setImmediate(() => connect(kind));
  });
}

function markReady(socket: net.Socket): void {
  ready++;
  socket.once('close', () => ready--);
}

/** One header byte every second, so the headers are never complete. */
function trickle(socket: net.Socket): void {
  const timer = setInterval(() => {
    if (socket.destroyed) clearInterval(timer);
    else socket.write('X');
  }, 1000);
  socket.once('close', () => clearInterval(timer));
}

/** A real client's first flight, recorded from a TLS client talking to a plain TCP server that never answers. */
async function recordClientHello(): Promise<Buffer> {
  const recorder = net.createServer();
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  const recorded = new Promise<Buffer>((resolve) =>
    recorder.once('connection', (s) => s.once('data', (d: Buffer) => (s.destroy(), resolve(d)))),
  );
  const client = tls.connect({
    host: '127.0.0.1',
    port: (recorder.address() as net.AddressInfo).port,
    servername: 'localhost',
  });
  client.on('error', () => {});
  const hello = await recorded;
  client.destroy();
  recorder.close();
  return hello;
}
const clientHello = KINDS.includes('hello') ? await recordClientHello() : Buffer.alloc(0);

for (let i = 0; i < count; i++) connect(KINDS[i % KINDS.length]);
// The test may stop reading before it stops this process.
process.stdout.on('error', () => process.exit(0));
const report = setInterval(() => process.stdout.write(`${JSON.stringify({ opened, closed, open, ready })}\n`), 200);
process.on('SIGTERM', () => {
  stopping = true;
  clearInterval(report);
  process.exit(0);
});
