/**
 * Where the watcher connects to Temporal, resolved as Temporal's SDKs and CLI resolve it (@temporalio/envconfig):
 * the selected profile of the TOML config file, then the TEMPORAL_* environment variables over it. It reads no
 * `process.env` of its own: src/config.ts hands it the environment.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import {
  loadClientConfigFromToml,
  loadClientConfigProfile,
  toClientOptions,
  type ClientConfigProfile,
  type ClientConfigTLS,
} from '@temporalio/envconfig';
import { ConfigError } from '../config-error.js';

type Environment = Readonly<Record<string, string | undefined>>;

/** The profile read when TEMPORAL_PROFILE is unset (the SDK's and the CLI's). */
export const DEFAULT_PROFILE = 'default';

/** Where a profile without an address connects: the default of Temporal's CLI and SDKs. */
export const DEFAULT_PROFILE_ADDRESS = 'localhost:7233';

/** Where the connection settings came from: what the log says at start (names only, never a value). */
export interface ConnectionSource {
  /** The profile read and its file; absent when no profile was used. */
  profile?: { name: string; file: string };
  /** The TEMPORAL_* variables that set a connection setting, over the profile's. */
  variables: string[];
}

/** A connection's settings in the form `Connection` and `NativeConnection` take, certificate files already read. */
export interface ConnectionSettings {
  /** Unset only when neither TEMPORAL_ADDRESS nor a profile names a cluster: `npm start` embeds a dev server. */
  address?: string;
  namespace?: string;
  apiKey?: string;
  /** `true`: TLS with the system's roots (an API key turns it on unless TLS is disabled). */
  tls?: TLSConfig | boolean;
  /** gRPC metadata sent with every call: the profile's `grpc_meta`, then TEMPORAL_GRPC_META_*. */
  metadata?: Record<string, string>;
  source: ConnectionSource;
}

/**
 * The Temporal connection: a profile of the Temporal config file and the TEMPORAL_* variables over it
 * (README, "Connecting to your Temporal"), plus the watcher's own task queue and UI settings.
 */
export interface TemporalConnectionConfig extends Omit<ConnectionSettings, 'namespace'> {
  namespace: string;
  taskQueue: string;
  /** Base URL of the Temporal UI, for `links.temporalUi`. */
  uiUrl?: string;
  /** Frontend port of the embedded dev server; its UI listens 1000 above. */
  embeddedPort: number;
}

/** The connection variables the SDK reads, besides TEMPORAL_GRPC_META_<header>. */
export const CONNECTION_VARIABLES: ReadonlySet<string> = new Set([
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
]);
/** TEMPORAL_GRPC_META_<header>: a gRPC header sent with every call. */
export const GRPC_META_PREFIX = 'TEMPORAL_GRPC_META_';

/** The TLS files of a profile: its field, its TOML key, and the variable prefix that overrides it. */
const TLS_FILES = [
  { field: 'clientCert', key: 'client_cert', variable: 'TEMPORAL_TLS_CLIENT_CERT' },
  { field: 'clientKey', key: 'client_key', variable: 'TEMPORAL_TLS_CLIENT_KEY' },
  { field: 'serverCACert', key: 'server_ca_cert', variable: 'TEMPORAL_TLS_SERVER_CA_CERT' },
] as const;

interface ConfigFile {
  path: string;
  /** Named by TEMPORAL_CONFIG_FILE, rather than the default location. */
  named: boolean;
}

/**
 * The connection settings of `env`: its TEMPORAL_PROFILE from the config file, with the TEMPORAL_* overrides over it
 * (docs/operations.md, "Connecting to your Temporal"); throws a ConfigError naming the variable or file at fault.
 */
export function resolveConnectionSettings(rawEnv: Environment): ConnectionSettings {
  const env = setVariables(rawEnv);
  const file = configFileOf(env);
  const text = file && readConfigFile(file);
  const profiles = file && text !== undefined ? profilesIn(text, file) : {};
  const name = env.TEMPORAL_PROFILE ?? DEFAULT_PROFILE;
  const used = Object.hasOwn(profiles, name);
  if (env.TEMPORAL_PROFILE !== undefined && !used) {
    throw missingProfile(name, file, text !== undefined ? profiles : undefined);
  }
  const where = used && file ? `profile "${name}" of ${file.path}` : 'the environment';

  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({
      ...(used ? { configSource: { data: text! }, profile: name } : { disableFile: true }),
      overrideEnvVars: env,
    });
  } catch (error) {
    throw new ConfigError(`Temporal connection settings (${where}): ${messageOf(error)}`);
  }
  const tls = profile.tls && withFilesRead(profile.tls, env, where);
  const { namespace, connectionOptions } = toClientOptions({ ...profile, ...(tls ? { tls } : {}) });
  const metadata = profile.grpcMeta && Object.keys(profile.grpcMeta).length > 0 ? profile.grpcMeta : undefined;
  return {
    address: connectionOptions.address ?? (used ? DEFAULT_PROFILE_ADDRESS : undefined),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(connectionOptions.apiKey !== undefined ? { apiKey: connectionOptions.apiKey } : {}),
    ...(connectionOptions.tls !== undefined && connectionOptions.tls !== null ? { tls: connectionOptions.tls } : {}),
    ...(metadata ? { metadata } : {}),
    source: {
      ...(used && file ? { profile: { name, file: file.path } } : {}),
      variables: Object.keys(env)
        .filter((key) => CONNECTION_VARIABLES.has(key) || key.startsWith(GRPC_META_PREFIX))
        .sort(),
    },
  };
}

/** The variables that are set: empty ones dropped, as everywhere in src/config.ts, but for the gRPC headers. */
function setVariables(env: Environment): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || (value === '' && !key.startsWith(GRPC_META_PREFIX))) continue;
    set[key] = value;
  }
  return set;
}

/** TEMPORAL_CONFIG_FILE, else the SDK's default: `temporalio/temporal.toml` in the user's config directory. */
function configFileOf(env: Environment): ConfigFile | undefined {
  if (env.TEMPORAL_CONFIG_FILE) return { path: path.resolve(env.TEMPORAL_CONFIG_FILE), named: true };
  const dir = userConfigDir(env);
  return dir ? { path: path.join(dir, 'temporalio', 'temporal.toml'), named: false } : undefined;
}

/** The user's config directory as the SDK finds it (Go's os.UserConfigDir); the SDK does not export it. */
function userConfigDir(env: Environment): string | undefined {
  switch (os.platform()) {
    case 'win32':
      return env.APPDATA;
    case 'darwin':
      return env.HOME && path.join(env.HOME, 'Library', 'Application Support');
    default:
      if (env.XDG_CONFIG_HOME) return path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
      return env.HOME && path.join(env.HOME, '.config');
  }
}

/**
 * The file's text; undefined when the default file does not exist. A file TEMPORAL_CONFIG_FILE names must exist
 * (the SDK would skip it): a typo in it would otherwise start an embedded server instead of the team's cluster.
 */
function readConfigFile(file: ConfigFile): string | undefined {
  try {
    return readFileSync(file.path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!file.named && (code === 'ENOENT' || code === 'ENOTDIR')) return undefined;
    const why = code ?? messageOf(error);
    throw new ConfigError(`${labelOf(file)}cannot read the Temporal config file ${file.path} (${why})`);
  }
}

/** The profiles of a config file; a file of blank lines and comments has none (the SDK fails on it). */
function profilesIn(text: string, file: ConfigFile): Record<string, ClientConfigProfile> {
  if (text.split(/\r?\n/).every((line) => /^\s*(#.*)?$/.test(line))) return {};
  try {
    return loadClientConfigFromToml(Buffer.from(text), { strict: false }).profiles;
  } catch (error) {
    throw new ConfigError(`${labelOf(file)}${file.path} is not a Temporal config file: ${messageOf(error)}`);
  }
}

/** TEMPORAL_PROFILE names a profile that is not there: say where we looked and what is there. */
function missingProfile(
  name: string,
  file: ConfigFile | undefined,
  profiles: Record<string, ClientConfigProfile> | undefined,
): ConfigError {
  const prefix = `TEMPORAL_PROFILE: no profile "${name}"`;
  if (!file) return new ConfigError(`${prefix}: no config file (set TEMPORAL_CONFIG_FILE, or HOME)`);
  if (!profiles) return new ConfigError(`${prefix}: ${file.path} does not exist (set TEMPORAL_CONFIG_FILE)`);
  const names = Object.keys(profiles).map((n) => `"${n}"`);
  return new ConfigError(
    `${prefix} in ${file.path} (${names.length > 0 ? `it has ${names.join(', ')}` : 'it has none'})`,
  );
}

/**
 * The TLS settings with each file read, so that a missing certificate is a ConfigError at start naming where its
 * path came from (the SDK would throw a bare ENOENT at connect). A certificate needs its key and a key its certificate:
 * the SDK would drop a lone one and connect without client authentication.
 */
function withFilesRead(tls: ClientConfigTLS, env: Environment, where: string): ClientConfigTLS {
  const read: ClientConfigTLS = { ...tls };
  for (const { field, key, variable } of TLS_FILES) {
    const source = tls[field];
    if (!source || !('path' in source)) continue;
    const origin = env[`${variable}_PATH`] !== undefined ? `${variable}_PATH` : `tls.${key}_path of ${where}`;
    try {
      read[field] = { data: readFileSync(source.path) };
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? messageOf(error);
      throw new ConfigError(`${origin}: cannot read ${source.path} (${why})`);
    }
  }
  if (Boolean(read.clientCert) !== Boolean(read.clientKey)) {
    const [has, lacks] = read.clientCert ? ['certificate', 'key'] : ['key', 'certificate'];
    throw new ConfigError(
      `Temporal TLS (${where}): a client ${has} without its ${lacks} (client_cert_* and client_key_*, or ` +
        'TEMPORAL_TLS_CLIENT_CERT_* and TEMPORAL_TLS_CLIENT_KEY_*, go together)',
    );
  }
  return read;
}

const labelOf = (file: ConfigFile) => (file.named ? 'TEMPORAL_CONFIG_FILE: ' : '');
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
