/**
 * The NATS users of `infra/nats/accounts.conf`, as everything that starts a server on that config needs
 * them (the test kit's config test, the security suite, `npm start`): their names, the inbox prefix each
 * one's permissions allow, the variable nats-server reads each password from, and passwords generated for
 * one run. The config itself stays the single source of the permissions.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { connect, PermissionViolationError, type NatsConnection } from '@nats-io/transport-node';

/** `infra/nats` of this repository: the configs `startNats({ config: { dir } })` loads. */
export const INFRA_NATS_DIR = fileURLToPath(new URL('../../../../infra/nats', import.meta.url));

export const INFRA_NATS_USERS = [
  'gateway',
  'assembler',
  'executor',
  'recall',
  'provisioner',
  'trusted-upstream',
  'upstream-acme',
  'tenant-acme',
] as const;
export type InfraNatsUser = (typeof INFRA_NATS_USERS)[number];

/** The example account of accounts.conf's `upstream-acme` and `tenant-acme` users. */
export const INFRA_EXAMPLE_ACCOUNT = 'acme';

/** `tenant-acme` → `_INBOX_tenant_acme`: the only reply subjects the user's permissions allow. */
export function infraInboxPrefix(user: InfraNatsUser): string {
  return `_INBOX_${user.replaceAll('-', '_')}`;
}

/** `tenant-acme` → `TENANT_ACME_PASSWORD`, as accounts.conf names them. */
export function infraPasswordVariable(user: InfraNatsUser): string {
  return `${user.replaceAll('-', '_').toUpperCase()}_PASSWORD`;
}

/**
 * A password for every user. Two of them are ones nats-server would misread if its variables were not
 * quoted (a leading `-` is a syntax error, all digits a number), so every run proves the quoting.
 */
export function generateInfraPasswords(): Record<InfraNatsUser, string> {
  const passwords = Object.fromEntries(
    INFRA_NATS_USERS.map((user) => [user, randomBytes(18).toString('base64url')]),
  ) as Record<InfraNatsUser, string>;
  passwords.gateway = `-${passwords.gateway}`;
  passwords.recall = String(randomBytes(6).readUIntBE(0, 6));
  return passwords;
}

/**
 * The environment nats-server reads accounts.conf's passwords from. nats-server parses a variable's value
 * as a config value, so each password is given as a quoted string.
 */
export function infraPasswordEnvironment(passwords: Record<InfraNatsUser, string>): Record<string, string> {
  return Object.fromEntries(
    INFRA_NATS_USERS.map((user) => [infraPasswordVariable(user), JSON.stringify(passwords[user])]),
  );
}

/** A connection as one infra user, with every permission violation the server reported on it, in order. */
export interface InfraClient {
  nc: NatsConnection;
  violations: PermissionViolationError[];
}

/**
 * Connects as `user` with its own inbox prefix (or another, to show what a wrong one gets) and records the
 * permission violations the server reports: what tests assert a refusal with, rather than a time-out.
 */
export async function connectAsInfraUser(
  url: string,
  user: InfraNatsUser,
  password: string,
  options: { inboxPrefix?: string } = {},
): Promise<InfraClient> {
  const nc = await connect({
    servers: url,
    user,
    pass: password,
    inboxPrefix: options.inboxPrefix ?? infraInboxPrefix(user),
    maxReconnectAttempts: 0,
  });
  const client: InfraClient = { nc, violations: [] };
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'error' && status.error instanceof PermissionViolationError) {
        client.violations.push(status.error);
      }
    }
  })();
  return client;
}
