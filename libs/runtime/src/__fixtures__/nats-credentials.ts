/**
 * Real credentials for the connection tests, made fresh per run: a CA with a server and a client
 * certificate (openssl), and a decentralised-auth chain (operator → account → user JWTs signed with
 * NKEYs) with the user's `.creds` file, as `nsc` would write them.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';

export interface TlsFiles {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all under `dir`. */
export function makeTlsFiles(dir: string): TlsFiles {
  const days = ['-days', '2'];
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca-key.pem',
      '-out',
      'ca.pem',
      '-subj',
      '/CN=test-ca',
      ...days,
    ],
    dir,
  );
  for (const [name, cn, ext] of [
    ['server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'],
    ['client', 'gateway', 'extendedKeyUsage=clientAuth\n'],
  ] as const) {
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      [
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}-key.pem`,
        '-out',
        `${name}.csr`,
        '-subj',
        `/CN=${cn}`,
      ],
      dir,
    );
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca-key.pem',
        '-CAcreateserial',
        '-out',
        `${name}.pem`,
        '-extfile',
        `${name}.ext`,
        ...days,
      ],
      dir,
    );
  }
  return {
    ca: join(dir, 'ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server-key.pem'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client-key.pem'),
  };
}

type KeyPair = ReturnType<typeof nkeys.createOperator>;

const b64url = (value: string | Uint8Array): string => Buffer.from(value).toString('base64url');

/** A NATS JWT: ed25519-nkey signature by `issuer` over `header.claims`. */
function natsJwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const header = b64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }));
  const body: Record<string, unknown> = {
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    name,
    sub: subject,
    nats: { ...nats, version: 2 },
  };
  // nsc's jti is a hash of the claims; the server does not check it, but keep it unique like nsc does.
  body.jti = createHash('sha256').update(JSON.stringify(body)).digest('base64url');
  const claims = b64url(JSON.stringify(body));
  const signature = issuer.sign(new TextEncoder().encode(`${header}.${claims}`));
  return `${header}.${claims}.${b64url(signature)}`;
}

export interface OperatorSetup {
  /** Server config lines (operator, memory resolver with the account preloaded). */
  serverConfig: string;
  /** The user's `.creds` file. */
  credsFile: string;
}

/** An operator, one account with everything allowed, and one user of it, with its creds file in `dir`. */
export function makeOperatorSetup(dir: string): OperatorSetup {
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  const user = nkeys.createUser();
  const unlimited = { subs: -1, data: -1, payload: -1 };
  const operatorJwt = natsJwt(operator, operator.getPublicKey(), 'test-operator', { type: 'operator' });
  const accountJwt = natsJwt(operator, account.getPublicKey(), 'MESH', {
    type: 'account',
    limits: { ...unlimited, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 },
  });
  const userJwt = natsJwt(account, user.getPublicKey(), 'gateway', {
    type: 'user',
    pub: {},
    sub: {},
    ...unlimited,
  });
  const credsFile = join(dir, 'gateway.creds');
  const seed = new TextDecoder().decode(user.getSeed());
  writeFileSync(
    credsFile,
    `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n` +
      '************************* IMPORTANT *************************\n' +
      'NKEY Seed printed below can be used to sign and prove identity.\n' +
      'NKEYs are sensitive and should be treated as secrets.\n\n' +
      `-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`,
    { mode: 0o600 },
  );
  return {
    serverConfig:
      `operator: ${operatorJwt}\nresolver: MEMORY\n` +
      `resolver_preload: {\n  ${account.getPublicKey()}: ${accountJwt}\n}\n`,
    credsFile,
  };
}
