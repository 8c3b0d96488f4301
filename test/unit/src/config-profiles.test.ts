/**
 * The Temporal connection from a profile of the Temporal config file and the TEMPORAL_* variables over it
 * (@temporalio/envconfig), as loadConfig resolves it: each test writes its own config file to a temporary directory
 * and hands loadConfig an environment of its own, so nothing of the machine's ~/.config leaks in.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { usesEmbeddedTemporal } from '../../../src/runtime.js';
import { connectionOptions, connectionSummary } from '../../../src/temporal/connection.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-profiles-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `content` to a new file of the test directory and answers its path. */
function write(content: string, name = `file-${++files}`): string {
  const file = path.join(dir, name);
  writeFileSync(file, content);
  return file;
}

const CERT = '-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnQ=\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nY2xpZW50IGtleQ==\n-----END PRIVATE KEY-----\n';
const CA = '-----BEGIN CERTIFICATE-----\nc2VydmVyIGNh\n-----END CERTIFICATE-----\n';

const TEAM_FILE = `
[profile.default]
address = "temporal.internal:7233"
namespace = "team"

[profile.prod]
address = "prod.a1b2c.tmprl.cloud:7233"
namespace = "prod.a1b2c"
api_key = "prod-api-key"
`;

/** loadConfig of `env` with TEMPORAL_CONFIG_FILE naming a fresh copy of TEAM_FILE. */
const loadWithTeamFile = (env: Record<string, string> = {}) =>
  loadConfig({ TEMPORAL_CONFIG_FILE: write(TEAM_FILE), ...env });

/** Writes a config file whose default profile, at temporal.internal:7233, has a TLS table of `tlsLines`. */
function writeTlsProfile(...tlsLines: string[]): string {
  const tls = tlsLines.map((line) => `${line}\n`).join('');
  return write(`
[profile.default]
address = "temporal.internal:7233"
[profile.default.tls]
${tls}`);
}

const tlsOf = (config: ReturnType<typeof loadConfig>) => config.temporal.tls as TLSConfig;
const text = (bytes: Uint8Array | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

describe('the profile', () => {
  it('is the one TEMPORAL_PROFILE names, from TEMPORAL_CONFIG_FILE', () => {
    const file = write(TEAM_FILE);

    const { temporal } = loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });

    expect(temporal).toMatchObject({
      address: 'prod.a1b2c.tmprl.cloud:7233',
      namespace: 'prod.a1b2c',
      apiKey: 'prod-api-key',
    });
    expect(temporal.source).toEqual({ profile: { name: 'prod', file }, variables: [] });
  });

  it('is `default` when TEMPORAL_PROFILE is unset', () => {
    const file = write(TEAM_FILE);

    const { temporal } = loadConfig({ TEMPORAL_CONFIG_FILE: file });

    expect(temporal).toMatchObject({ address: 'temporal.internal:7233', namespace: 'team' });
    expect(temporal.source.profile).toEqual({ name: 'default', file });
  });

  it('is read from the SDK default path, temporalio/temporal.toml in the user config directory', () => {
    const configHome = path.join(dir, `xdg-${++files}`);
    mkdirSync(path.join(configHome, 'temporalio'), { recursive: true });
    writeFileSync(path.join(configHome, 'temporalio', 'temporal.toml'), TEAM_FILE);

    const { temporal } = loadConfig({ XDG_CONFIG_HOME: configHome, TEMPORAL_PROFILE: 'prod' });

    expect(temporal.address).toBe('prod.a1b2c.tmprl.cloud:7233');
    expect(temporal.source.profile).toEqual({
      name: 'prod',
      file: path.join(configHome, 'temporalio', 'temporal.toml'),
    });
  });

  it('without an address connects where Temporal clients do by default, not to an embedded server', () => {
    const file = write('[profile.default]\nnamespace = "team"\n');

    const config = loadConfig({ TEMPORAL_CONFIG_FILE: file });

    expect(config.temporal).toMatchObject({ address: 'localhost:7233', namespace: 'team' });
    expect(usesEmbeddedTemporal(config)).toBe(false);
  });
});

describe('the TEMPORAL_* variables', () => {
  it('override the profile, and the log names them', () => {
    const { temporal } = loadWithTeamFile({
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: 'staging.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'staging.a1b2c',
      TEMPORAL_API_KEY: 'staging-api-key',
    });

    expect(temporal).toMatchObject({
      address: 'staging.a1b2c.tmprl.cloud:7233',
      namespace: 'staging.a1b2c',
      apiKey: 'staging-api-key',
    });
    expect(temporal.source.variables).toEqual(['TEMPORAL_ADDRESS', 'TEMPORAL_API_KEY', 'TEMPORAL_NAMESPACE']);
  });

  it('count as unset when empty, as docker-compose passes them', () => {
    const { temporal } = loadWithTeamFile({ TEMPORAL_ADDRESS: '', TEMPORAL_NAMESPACE: '', TEMPORAL_PROFILE: '' });

    expect(temporal).toMatchObject({ address: 'temporal.internal:7233', namespace: 'team' });
    expect(temporal.source.variables).toEqual([]);
  });

  it('alone give the connection when there is no config file', () => {
    const { temporal } = loadConfig({
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'ops',
      TEMPORAL_API_KEY: 'k',
    });

    expect(temporal).toMatchObject({ address: 'temporal:7233', namespace: 'ops', apiKey: 'k', tls: true });
    expect(temporal.source).toEqual({ variables: ['TEMPORAL_ADDRESS', 'TEMPORAL_API_KEY', 'TEMPORAL_NAMESPACE'] });
  });

  it('keep the task queue the watcher own: TEMPORAL_TASK_QUEUE, whatever the profile', () => {
    const file = write(TEAM_FILE);

    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file }).temporal.taskQueue).toBe('expectations');
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_TASK_QUEUE: 'watcher' }).temporal.taskQueue).toBe(
      'watcher',
    );
  });
});

describe('TLS', () => {
  it('reads the certificate, key and CA files a profile names, with its server name', () => {
    const [cert, key, ca] = [write(CERT), write(KEY), write(CA)];
    const file = writeTlsProfile(
      `client_cert_path = "${cert}"`,
      `client_key_path = "${key}"`,
      `server_ca_cert_path = "${ca}"`,
      'server_name = "temporal.internal"',
    );

    const tls = tlsOf(loadConfig({ TEMPORAL_CONFIG_FILE: file }));

    expect(text(tls.clientCertPair?.crt)).toBe(CERT);
    expect(text(tls.clientCertPair?.key)).toBe(KEY);
    expect(text(tls.serverRootCACertificate)).toBe(CA);
    expect(tls.serverNameOverride).toBe('temporal.internal');
  });

  it('takes certificate and key data written inline in the profile', () => {
    const file = writeTlsProfile(`client_cert_data = """${CERT}"""`, `client_key_data = """${KEY}"""`);

    const tls = tlsOf(loadConfig({ TEMPORAL_CONFIG_FILE: file }));

    expect(text(tls.clientCertPair?.crt)).toBe(CERT);
    expect(text(tls.clientCertPair?.key)).toBe(KEY);
  });

  it('takes files named by TEMPORAL_TLS_*_PATH over the profile', () => {
    const [profileCert, profileKey, envCert, envKey] = [
      write(CERT),
      write(KEY),
      write(`${CERT}env`),
      write(`${KEY}env`),
    ];
    const file = writeTlsProfile(`client_cert_path = "${profileCert}"`, `client_key_path = "${profileKey}"`);

    const tls = tlsOf(
      loadConfig({
        TEMPORAL_CONFIG_FILE: file,
        TEMPORAL_TLS_CLIENT_CERT_PATH: envCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: envKey,
      }),
    );

    expect(text(tls.clientCertPair?.crt)).toBe(`${CERT}env`);
    expect(text(tls.clientCertPair?.key)).toBe(`${KEY}env`);
  });

  it('takes certificate and key data from TEMPORAL_TLS_CLIENT_CERT_DATA and _KEY_DATA', () => {
    const tls = tlsOf(
      loadConfig({
        TEMPORAL_ADDRESS: 'temporal:7233',
        TEMPORAL_TLS_CLIENT_CERT_DATA: CERT,
        TEMPORAL_TLS_CLIENT_KEY_DATA: KEY,
      }),
    );

    expect(text(tls.clientCertPair?.crt)).toBe(CERT);
    expect(text(tls.clientCertPair?.key)).toBe(KEY);
  });

  it('is on for an API key unless the profile or TEMPORAL_TLS turns it off', () => {
    const file = write(
      '[profile.default]\naddress = "temporal.internal:7233"\napi_key = "k"\n[profile.default.tls]\ndisabled = true\n',
    );

    expect(loadWithTeamFile({ TEMPORAL_PROFILE: 'prod' }).temporal.tls).toBe(true);
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file }).temporal).toMatchObject({ apiKey: 'k', tls: false });
    expect(
      loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' }).temporal.tls,
    ).toBe(false);
  });
});

describe('gRPC metadata', () => {
  it('comes from the profile grpc_meta with TEMPORAL_GRPC_META_<header> over it; empty removes a header', () => {
    const file = write(`
[profile.default]
address = "temporal.internal:7233"
[profile.default.grpc_meta]
x-team = "ops"
x-region = "eu"
`);

    const { temporal } = loadConfig({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_GRPC_META_X_TENANT: 'acme',
      TEMPORAL_GRPC_META_X_REGION: '',
    });

    expect(temporal.metadata).toEqual({ 'x-team': 'ops', 'x-tenant': 'acme' });
    expect(connectionOptions(temporal).metadata).toEqual({ 'x-team': 'ops', 'x-tenant': 'acme' });
    expect(temporal.source.variables).toEqual(['TEMPORAL_GRPC_META_X_REGION', 'TEMPORAL_GRPC_META_X_TENANT']);
  });
});

describe('what the log says about the connection', () => {
  it('names the profile, its file and the overriding variables, and no secret', () => {
    const [cert, key] = [write(CERT), write(KEY)];
    const file = write(`
[profile.prod]
address = "prod.a1b2c.tmprl.cloud:7233"
namespace = "prod.a1b2c"
api_key = "secret-api-key"
[profile.prod.tls]
client_cert_path = "${cert}"
client_key_path = "${key}"
[profile.prod.grpc_meta]
authorization-extras = "secret-header-value"
`);

    const summary = connectionSummary(
      loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'other.a1b2c' }).temporal,
    );

    expect(summary).toMatchObject({
      address: 'prod.a1b2c.tmprl.cloud:7233',
      namespace: 'other.a1b2c',
      settingsFrom: `profile "prod" of ${file}`,
      profile: 'prod',
      configFile: file,
      overriddenBy: ['TEMPORAL_NAMESPACE'],
      tls: 'mTLS',
      apiKey: 'set',
      grpcMetadata: ['authorization-extras'],
    });
    const logged = JSON.stringify(summary);
    expect(logged).not.toContain('secret-api-key');
    expect(logged).not.toContain('secret-header-value');
    expect(logged).not.toContain('Y2xpZW50IGtleQ');
  });

  it('says environment when no profile was read', () => {
    expect(connectionSummary(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }).temporal)).toMatchObject({
      settingsFrom: 'environment',
      overriddenBy: ['TEMPORAL_ADDRESS'],
      tls: 'off',
      apiKey: 'none',
    });
  });
});

describe('the embedded dev server', () => {
  it('is started when there is neither TEMPORAL_ADDRESS nor a config file', () => {
    const config = loadConfig({ HOME: path.join(dir, 'no-such-home') });

    expect(config.temporal.address).toBeUndefined();
    expect(usesEmbeddedTemporal(config)).toBe(true);
  });

  it('is started when the config file lacks the default profile and TEMPORAL_PROFILE is unset', () => {
    const config = loadConfig({ TEMPORAL_CONFIG_FILE: write('[profile.prod]\naddress = "prod:7233"\n') });

    expect(config.temporal.source.profile).toBeUndefined();
    expect(usesEmbeddedTemporal(config)).toBe(true);
  });

  it('is started for an empty config file (TEMPORAL_CONFIG_FILE=/dev/null leaves a default profile aside)', () => {
    expect(usesEmbeddedTemporal(loadConfig({ TEMPORAL_CONFIG_FILE: write('# nothing yet\n\n') }))).toBe(true);
    expect(usesEmbeddedTemporal(loadConfig({ TEMPORAL_CONFIG_FILE: '/dev/null' }))).toBe(true);
  });

  it('is not started when a profile or TEMPORAL_ADDRESS gives an address', () => {
    expect(usesEmbeddedTemporal(loadWithTeamFile())).toBe(false);
    expect(usesEmbeddedTemporal(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }))).toBe(false);
  });
});

describe('errors', () => {
  it('names TEMPORAL_PROFILE and the profiles the file has when it names another', () => {
    const file = write(TEAM_FILE);
    const read = () => loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(`TEMPORAL_PROFILE: no profile "staging" in ${file} (it has "default", "prod")`);
  });

  it('names TEMPORAL_PROFILE when there is no config file to find it in', () => {
    const home = path.join(dir, 'empty-home');
    const read = () => loadConfig({ HOME: home, TEMPORAL_PROFILE: 'prod' });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      `TEMPORAL_PROFILE: no profile "prod": ${path.join(home, '.config', 'temporalio', 'temporal.toml')} does not exist`,
    );
  });

  it('names TEMPORAL_CONFIG_FILE when the file it names does not exist, rather than starting an embedded server', () => {
    const missing = path.join(dir, 'no-such.toml');

    expect(() => loadConfig({ TEMPORAL_CONFIG_FILE: missing })).toThrow(
      `TEMPORAL_CONFIG_FILE: cannot read the Temporal config file ${missing} (ENOENT)`,
    );
  });

  it('names the file when it cannot be read', () => {
    const directory = path.join(dir, 'a-directory');
    mkdirSync(directory);

    expect(() => loadConfig({ TEMPORAL_CONFIG_FILE: directory })).toThrow(
      `TEMPORAL_CONFIG_FILE: cannot read the Temporal config file ${directory} (EISDIR)`,
    );
  });

  it('names the file when it is not TOML', () => {
    const file = write('[profile.default\naddress = ');

    expect(() => loadConfig({ TEMPORAL_CONFIG_FILE: file })).toThrow(
      `TEMPORAL_CONFIG_FILE: ${file} is not a Temporal config file`,
    );
  });

  it('names the profile key of a TLS file that cannot be read', () => {
    const missing = path.join(dir, 'no-such-cert.pem');
    const file = write(
      `[profile.prod]\naddress = "a:7233"\n[profile.prod.tls]\nclient_cert_path = "${missing}"\nclient_key_path = "${missing}"\n`,
    );

    expect(() => loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' })).toThrow(
      `tls.client_cert_path of profile "prod" of ${file}: cannot read ${missing} (ENOENT)`,
    );
  });

  it('names the variable of a TLS file that cannot be read', () => {
    const missing = path.join(dir, 'no-such-ca.pem');

    expect(() => loadConfig({ TEMPORAL_ADDRESS: 'a:7233', TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing })).toThrow(
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read ${missing} (ENOENT)`,
    );
  });

  it('refuses a client certificate without its key', () => {
    expect(() => loadConfig({ TEMPORAL_ADDRESS: 'a:7233', TEMPORAL_TLS_CLIENT_CERT_PATH: write(CERT) })).toThrow(
      /a client certificate without its key/,
    );
  });

  it('refuses a TEMPORAL_TLS that is not a boolean', () => {
    expect(() => loadConfig({ TEMPORAL_TLS: 'yes' })).toThrow(/TEMPORAL_TLS: /);
  });
});
