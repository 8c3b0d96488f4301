/**
 * Ports for the cluster: the ones asked for, and free ones for the rest (all different).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Listens on 127.0.0.1:port (`port` 0: any) and closes again: the port it got, or the error that refused it. */
function listenOnce(port: number): Promise<{ port: number } | { error: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve({ error }));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve({ port: bound }));
    });
  });
}

/** True when a server can listen on 127.0.0.1:port right now (`port` 0: any), resolving the port it got. */
async function tryListen(port: number): Promise<number | undefined> {
  const result = await listenOnce(port);
  return 'port' in result ? result.port : undefined;
}

/** A port of the cluster that something else holds: starting anyway would talk to whatever that is. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';
}

/**
 * Resolves when a server of the cluster can listen on 127.0.0.1:port; otherwise rejects with a PortInUseError naming
 * the port and what it is for (`what`, e.g. `frontend`). A wildcard listener (0.0.0.0, ::) holds it too.
 */
export async function ensurePortFree(port: number, what: string): Promise<void> {
  const result = await listenOnce(port);
  if ('port' in result) return;
  if (result.error.code !== 'EADDRINUSE') {
    throw new PortInUseError(`port ${port} (${what}) cannot be used: ${result.error.code ?? result.error.message}`);
  }
  throw new PortInUseError(
    `port ${port} (${what}) is in use: something else listens on 127.0.0.1:${port} (another cluster or dev server?); stop it or choose another port`,
  );
}

/**
 * Where the kernel takes the local ports of outgoing connections (Linux's ip_local_port_range; 32768 when unknown). A
 * port chosen inside it can be taken by any connect() between the choice and the listen (a service's connection to
 * PostgreSQL, say), and the service that was to listen on it then finds it in use.
 */
export function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 10_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A port of 127.0.0.1 nobody listens on right now, below the kernel's ephemeral ports so that no outgoing connection
 * takes it before its server listens. `below`: a lower bound still, for the membership ports, which the server keeps
 * in a SMALLINT column (so at most 32767).
 */
export async function freePort(below?: number): Promise<number> {
  const low = 10_000;
  const high = Math.min(below ?? 65_536, ephemeralLow());
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await tryListen(low + Math.floor(Math.random() * (high - low)));
    if (port !== undefined) return port;
  }
  throw new Error(`no free port of 127.0.0.1 between ${low} and ${high - 1}`);
}

/**
 * Each given port as it is; each `undefined` replaced by a free port, each `{ below }` by a free port under the bound;
 * all different from each other.
 */
export async function freePorts(wanted: Array<number | undefined | { below: number }>): Promise<number[]> {
  const taken = new Set(wanted.filter((port): port is number => typeof port === 'number'));
  const result: number[] = [];
  for (const port of wanted) {
    if (typeof port === 'number') {
      result.push(port);
      continue;
    }
    const below = port?.below;
    let candidate = await freePort(below);
    while (taken.has(candidate)) candidate = await freePort(below);
    taken.add(candidate);
    result.push(candidate);
  }
  return result;
}
