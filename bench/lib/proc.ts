/**
 * What a process costs, read from /proc (Linux): resident memory and CPU time. Also the machine the run is on.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on every Linux we run on). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Resident set size and its peak (VmRSS, VmHWM) in MiB. */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024) };
}

/**
 * The fields of /proc/<pid>/stat after the command name, which may hold spaces and parentheses (so they are counted
 * after the last ')'): [1] the parent's pid, [11] utime, [12] stime, [13] cutime, [14] cstime, in clock ticks.
 */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User plus system CPU time the process has used so far, in milliseconds. */
export function cpuMs(pid: number): number {
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/**
 * CPU time of a process and every process under it, in milliseconds: its own time, the time of its children that
 * have exited and it has reaped (cutime, cstime), and the time of those still running. Read twice, the difference is
 * what the tree used in between, children that came and went included: e.g. PostgreSQL's postmaster and its backends.
 */
export function treeCpuMs(root: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = Number(statFields(Number(entry))[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const fields = statFields(root);
  let ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  const below = [...(children.get(root) ?? [])];
  for (let pid = below.pop(); pid !== undefined; pid = below.pop()) {
    below.push(...(children.get(pid) ?? []));
    try {
      const child = statFields(pid);
      ticks += Number(child[11]) + Number(child[12]);
    } catch {
      // Exited between the scan and now: its time is in its parent's cutime from now on, not counted this time.
    }
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Size in MiB of a SQLite database with its -wal and -shm files (missing ones count zero). */
export function sqliteMiB(file: string): { db: number; wal: number; total: number } {
  const size = (path: string) => {
    try {
      return statSync(path).size;
    } catch {
      return 0;
    }
  };
  const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));
  const db = size(file);
  const wal = size(`${file}-wal`) + size(`${file}-shm`);
  return { db: mib(db), wal: mib(wal), total: mib(db + wal) };
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  os: string;
  temporal: string;
  loadAverageAtStart: number[];
}

/** The machine, with the temporal CLI's version when a binary is given. */
export function describeMachine(temporalCli?: string): Machine {
  let temporal = 'external server';
  if (temporalCli) {
    try {
      temporal = execFileSync(temporalCli, ['--version'], { encoding: 'utf8' }).trim();
    } catch (error) {
      temporal = `unknown (${(error as Error).message})`;
    }
  }
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Number((os.totalmem() / 1024 ** 3).toFixed(1)),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    temporal,
    loadAverageAtStart: os.loadavg().map((value) => Number(value.toFixed(2))),
  };
}
