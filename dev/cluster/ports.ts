/**
 * Ports for the cluster: the ones asked for, and free ones for the rest (all different).
 */
import net from 'node:net';

/** True when a server can listen on 127.0.0.1:port right now (`port` 0: any), resolving the port it got. */
function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A port of 127.0.0.1 nobody listens on right now. `below`: under that bound, for the membership ports, which the
 * server keeps in a SMALLINT column (so at most 32767; the kernel's ephemeral ports start above it).
 */
export async function freePort(below?: number): Promise<number> {
  if (below === undefined) {
    const port = await tryListen(0);
    if (port !== undefined) return port;
  }
  const low = 10_000;
  const high = below ?? 65_535;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await tryListen(low + Math.floor(Math.random() * (high - low)));
    if (port !== undefined) return port;
  }
  throw new Error(`no free port of 127.0.0.1 between ${low} and ${high}`);
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
