/**
 * Ports for the cluster: the ones asked for, and free ones for the rest (all different).
 */
import net from 'node:net';

/** A port of 127.0.0.1 nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Each given port as it is, each undefined one replaced by a free port that differs from all the others. */
export async function freePorts(wanted: Array<number | undefined>): Promise<number[]> {
  const taken = new Set(wanted.filter((port): port is number => port !== undefined));
  const result: number[] = [];
  for (const port of wanted) {
    if (port !== undefined) {
      result.push(port);
      continue;
    }
    let candidate = await freePort();
    while (taken.has(candidate)) candidate = await freePort();
    taken.add(candidate);
    result.push(candidate);
  }
  return result;
}
