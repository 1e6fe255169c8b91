/**
 * NATS connection for services: how it logs in (user/password from NATS_URL or NATS_USER/NATS_PASSWORD,
 * a token, an NKEY seed or a credentials file), TLS, the service's own inbox prefix, and the connection
 * policy: reconnect forever (a service outlives NATS restarts) and wait for the first connection
 * instead of failing start-up when NATS comes up a little later than the service.
 *
 * nats.js ignores `user:password@` in a server URL, so the userinfo is taken out of NATS_URL here and
 * handed over as an authenticator. Seeds and credentials files are read again on every (re)connect, so
 * a rotated file is picked up without a restart.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import {
  credsAuthenticator,
  nkeyAuthenticator,
  nkeys,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
  type Authenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import { ConfigError, type BaseConfig } from './config.js';
import { connectWithTurnBatching } from './nats-transport.js';

/** The NATS_* variables of the base config that decide where and how a service connects. */
export type NatsSettings = Pick<
  BaseConfig,
  | 'NATS_URL'
  | 'NATS_USER'
  | 'NATS_PASSWORD'
  | 'NATS_TOKEN'
  | 'NATS_NKEY_SEED'
  | 'NATS_NKEY_SEED_FILE'
  | 'NATS_CREDS_FILE'
  | 'NATS_TLS_CA'
  | 'NATS_TLS_CERT'
  | 'NATS_TLS_KEY'
  | 'NATS_INBOX_PREFIX'
>;

export interface NatsConnectionOptions {
  settings: Readonly<NatsSettings>;
  /** Connection name shown in NATS monitoring, e.g. `gateway`; also names the default inbox prefix. */
  name: string;
}

type Problem = { variable: string; message: string };

/** `_INBOX_<name>`: one subject token, so a user's permissions can name exactly its own inbox. */
export function defaultInboxPrefix(name: string): string {
  return `_INBOX_${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

interface UrlUserinfo {
  user?: string;
  password?: string;
  token?: string;
}

/** Splits `nats://user:pass@host:port` into the server address nats.js uses and the credentials. */
function splitServer(entry: string): { server: string; userinfo?: UrlUserinfo } {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?(?:([^@/]*)@)?(.*)$/.exec(entry);
  const [, scheme = '', userinfo, rest = ''] = match ?? [];
  const server = `${scheme}${rest}`;
  if (userinfo === undefined) return { server };
  const separator = userinfo.indexOf(':');
  // nats://<token>@host is the NATS convention for a token; user:password otherwise.
  if (separator < 0) return { server, userinfo: { token: decodeURIComponent(userinfo) } };
  return {
    server,
    userinfo: {
      user: decodeURIComponent(userinfo.slice(0, separator)),
      password: decodeURIComponent(userinfo.slice(separator + 1)),
    },
  };
}

function sameUserinfo(a: UrlUserinfo | undefined, b: UrlUserinfo | undefined): boolean {
  return a?.user === b?.user && a?.password === b?.password && a?.token === b?.token;
}

function readable(path: string, variable: string, problems: Problem[]): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    problems.push({ variable, message: `cannot read ${path} (${code})` });
    return false;
  }
}

/** A file's content with surrounding whitespace removed, as bytes (seed files often end in a newline). */
function trimmedFile(path: string): Uint8Array {
  return new TextEncoder().encode(readFileSync(path, 'utf8').trim());
}

/** Checks an authenticator once at start, so a malformed seed or creds file stops start-up clearly. */
function usable(authenticator: Authenticator, variable: string, what: string, problems: Problem[]): boolean {
  try {
    authenticator('start-up-check');
    return true;
  } catch {
    problems.push({ variable, message: `is not ${what}` });
    return false;
  }
}

/**
 * The nats.js options for these settings, or a {@link ConfigError} naming every variable that is
 * inconsistent (two login methods, a password without a user, a certificate without its key, a file
 * that cannot be read). Never echoes a secret.
 */
export function natsConnectionOptions({ settings, name }: NatsConnectionOptions): NodeConnectionOptions {
  const problems: Problem[] = [];
  const entries = settings.NATS_URL.split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(splitServer);
  const urlUserinfo = entries.find((entry) => entry.userinfo)?.userinfo;
  // URLs without userinfo log in with the same credentials; two different ones cannot both be used.
  if (entries.some((entry) => entry.userinfo && !sameUserinfo(entry.userinfo, urlUserinfo))) {
    problems.push({ variable: 'NATS_URL', message: 'its URLs carry different credentials' });
  }

  const methods: string[] = [];
  if (urlUserinfo) methods.push('credentials in NATS_URL');
  if (settings.NATS_USER !== undefined || settings.NATS_PASSWORD !== undefined) methods.push('NATS_USER');
  if (settings.NATS_TOKEN !== undefined) methods.push('NATS_TOKEN');
  if (settings.NATS_NKEY_SEED !== undefined) methods.push('NATS_NKEY_SEED');
  if (settings.NATS_NKEY_SEED_FILE !== undefined) methods.push('NATS_NKEY_SEED_FILE');
  if (settings.NATS_CREDS_FILE !== undefined) methods.push('NATS_CREDS_FILE');
  if (methods.length > 1) {
    problems.push({
      variable: methods.filter((m) => m.startsWith('NATS_')).join(', ') || 'NATS_URL',
      message: `choose one way to log in to NATS, got ${methods.join(' and ')}`,
    });
  }
  if (settings.NATS_USER !== undefined && settings.NATS_PASSWORD === undefined) {
    problems.push({ variable: 'NATS_PASSWORD', message: 'is required with NATS_USER' });
  }
  if (settings.NATS_PASSWORD !== undefined && settings.NATS_USER === undefined) {
    problems.push({ variable: 'NATS_USER', message: 'is required with NATS_PASSWORD' });
  }
  if ((settings.NATS_TLS_CERT === undefined) !== (settings.NATS_TLS_KEY === undefined)) {
    problems.push({
      variable: settings.NATS_TLS_CERT === undefined ? 'NATS_TLS_CERT' : 'NATS_TLS_KEY',
      message: 'NATS_TLS_CERT and NATS_TLS_KEY go together',
    });
  }

  let authenticator: Authenticator | undefined;
  if (urlUserinfo?.token !== undefined) authenticator = tokenAuthenticator(urlUserinfo.token);
  else if (urlUserinfo)
    authenticator = usernamePasswordAuthenticator(urlUserinfo.user ?? '', urlUserinfo.password);
  else if (settings.NATS_USER !== undefined)
    authenticator = usernamePasswordAuthenticator(settings.NATS_USER, settings.NATS_PASSWORD);
  else if (settings.NATS_TOKEN !== undefined) authenticator = tokenAuthenticator(settings.NATS_TOKEN);
  else if (settings.NATS_NKEY_SEED !== undefined) {
    const seed = new TextEncoder().encode(settings.NATS_NKEY_SEED);
    authenticator = nkeyAuthenticator(seed);
    if (!usable(authenticator, 'NATS_NKEY_SEED', 'a valid NKEY seed', problems)) authenticator = undefined;
    else if (!isUserSeed(seed))
      problems.push({ variable: 'NATS_NKEY_SEED', message: 'is not an NKEY user seed' });
  } else if (settings.NATS_NKEY_SEED_FILE !== undefined) {
    const file = settings.NATS_NKEY_SEED_FILE;
    if (readable(file, 'NATS_NKEY_SEED_FILE', problems)) {
      authenticator = nkeyAuthenticator(() => trimmedFile(file));
      if (!usable(authenticator, 'NATS_NKEY_SEED_FILE', 'a file holding an NKEY seed', problems))
        authenticator = undefined;
    }
  } else if (settings.NATS_CREDS_FILE !== undefined) {
    const file = settings.NATS_CREDS_FILE;
    if (readable(file, 'NATS_CREDS_FILE', problems)) {
      authenticator = credsAuthenticator(() => readFileSync(file));
      if (!usable(authenticator, 'NATS_CREDS_FILE', 'a credentials file (user JWT and seed)', problems))
        authenticator = undefined;
    }
  }

  const tls: NonNullable<NodeConnectionOptions['tls']> = {};
  if (settings.NATS_TLS_CA !== undefined && readable(settings.NATS_TLS_CA, 'NATS_TLS_CA', problems))
    tls.caFile = settings.NATS_TLS_CA;
  if (settings.NATS_TLS_CERT !== undefined && readable(settings.NATS_TLS_CERT, 'NATS_TLS_CERT', problems))
    tls.certFile = settings.NATS_TLS_CERT;
  if (settings.NATS_TLS_KEY !== undefined && readable(settings.NATS_TLS_KEY, 'NATS_TLS_KEY', problems))
    tls.keyFile = settings.NATS_TLS_KEY;

  if (problems.length > 0) throw new ConfigError(problems);
  const tlsWanted =
    settings.NATS_TLS_CA !== undefined ||
    settings.NATS_TLS_CERT !== undefined ||
    settings.NATS_TLS_KEY !== undefined;
  return {
    servers: entries.map((entry) => entry.server),
    name,
    inboxPrefix: settings.NATS_INBOX_PREFIX ?? defaultInboxPrefix(name),
    ...(authenticator ? { authenticator } : {}),
    ...(tlsWanted ? { tls } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // Every request (each JetStream publish, KV write and ack) would otherwise build an Error just to keep
    // its caller's stack for a timeout report: a large share of the client's CPU per task. Timeouts still
    // carry the subject.
    noAsyncTraces: true,
    waitOnFirstConnect: true,
  };
}

function isUserSeed(seed: Uint8Array): boolean {
  try {
    return nkeys.fromSeed(seed).getPublicKey().startsWith('U');
  } catch {
    return false;
  }
}

/** Connects with {@link natsConnectionOptions}; throws its ConfigError before any network traffic. */
export async function connectNats(options: NatsConnectionOptions): Promise<NatsConnection> {
  return connectWithTurnBatching(natsConnectionOptions(options));
}
