/** What a process costs, read from /proc (Linux): resident memory and CPU time. Also the machine the run is on. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { descendants } from '../../test/support/faults.js';

/** Clock ticks per second of /proc/<pid>/stat: USER_HZ, 100 on every Linux architecture we run on. */
const CLOCK_TICKS = 100;

/** Resident set size and its peak (VmRSS, VmHWM) in MiB. */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024) };
}

/** Ticks of utime, stime, cutime and cstime (/proc/<pid>/stat, counted after the command name's last ')'). */
function cpuTicks(pid: number): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 15)
    .map(Number);
}

/** User plus system CPU time the process has used so far, in milliseconds. */
export function cpuMs(pid: number): number {
  const [utime, stime] = cpuTicks(pid);
  return ((utime! + stime!) * 1000) / CLOCK_TICKS;
}

/** The benchmark process's own CPU time so far, in milliseconds. */
export function processCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * CPU time of a process and every process under it, in milliseconds: its own, its reaped children's (cutime, cstime)
 * and its running descendants'. Read twice, the difference counts children that came and went: PostgreSQL's backends.
 */
export function treeCpuMs(root: number): number {
  let ticks = cpuTicks(root).reduce((sum, value) => sum + value, 0);
  for (const pid of descendants(root)) {
    try {
      const [utime, stime] = cpuTicks(pid);
      ticks += utime! + stime!;
    } catch {
      // Exited since the scan: its time is in its parent's cutime from now on.
    }
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Reads each CPU clock (ms so far; undefined: not measured) now; the answer gives what each used since. */
export function cpuSince<K extends string>(clocks: Record<K, (() => number) | undefined>) {
  const entries = Object.entries(clocks) as Array<[K, (() => number) | undefined]>;
  const before = entries.map(([, read]) => read?.());
  const used = (read: (() => number) | undefined, i: number) => (read ? read() - before[i]! : undefined);
  return () =>
    Object.fromEntries(entries.map(([key, read], i) => [key, used(read, i)])) as Record<K, number | undefined>;
}

/** Size in MiB of a SQLite database with its -wal and -shm files (missing ones count zero). */
export function sqliteMiB(file: string): number {
  const size = (suffix: string) => statSync(`${file}${suffix}`, { throwIfNoEntry: false })?.size ?? 0;
  return Number(((size('') + size('-wal') + size('-shm')) / 1024 / 1024).toFixed(1));
}

/** The bytes of every file under `dir` (a cluster's PostgreSQL data directory: tables, indexes, WAL), in MiB. */
export function directoryMiB(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile())
      bytes += statSync(path.join(entry.parentPath, entry.name), { throwIfNoEntry: false })?.size ?? 0;
  }
  return Number((bytes / 1024 / 1024).toFixed(1));
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
