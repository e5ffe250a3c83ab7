// A token-less attacker, run as its own process by api-hostile-lockout.test.ts: it holds `count` connections to
// the API server and re-opens each one as soon as the server closes it. A third never send a byte (idle TCP), a
// third send half a TLS record and stop (no handshake), a third finish the handshake and trickle request headers
// that never end (slow headers). Every 200 ms it prints one JSON line: {"opened","closed","open"}.
// Usage: node --import tsx lockout-attacker.ts <host> <port> <count> [kinds, comma-separated]
import net from 'node:net';
import tls from 'node:tls';

const [host = '127.0.0.1', portText = '0', countText = '1000', kindsText = 'idle,half-hello,slow-headers'] =
  process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
let opened = 0;
let closed = 0;
let open = 0;
let stopping = false;

type Kind = 'idle' | 'half-hello' | 'slow-headers';
const KINDS = kindsText.split(',') as Kind[];

function connect(kind: Kind): void {
  if (stopping) return;
  const socket: net.Socket =
    kind === 'slow-headers'
      ? tls.connect({ host, port, rejectUnauthorized: false }, () => {
          socket.write('GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\n');
          trickle(socket);
        })
      : net.connect({ host, port }, () => {
          // A TLS record header announcing a handshake message that never arrives.
          if (kind === 'half-hello') socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
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

/** One header byte every second, so the headers are never complete. */
function trickle(socket: net.Socket): void {
  const timer = setInterval(() => {
    if (socket.destroyed) clearInterval(timer);
    else socket.write('X');
  }, 1000);
  socket.once('close', () => clearInterval(timer));
}

for (let i = 0; i < count; i++) connect(KINDS[i % KINDS.length]);
// The test may stop reading before it stops this process.
process.stdout.on('error', () => process.exit(0));
const report = setInterval(() => process.stdout.write(`${JSON.stringify({ opened, closed, open })}\n`), 200);
process.on('SIGTERM', () => {
  stopping = true;
  clearInterval(report);
  process.exit(0);
});
