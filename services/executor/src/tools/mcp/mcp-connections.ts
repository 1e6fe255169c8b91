/**
 * The executor's open MCP client sessions, reused across tasks and never across accounts: a session is
 * keyed by the task's account, the server as the task carries it (transport, auth mapping, filter) and the
 * credential values it was opened with, so two accounts — or two users of one account with different
 * tokens — never share one. Each keeps the server's tool list for its TTL; `notifications/tools/list_changed`
 * replaces it at once. A session unused for `idleMs`, or beyond `maxSessions` (least recently used first), is
 * closed; one whose transport closed is dropped and opened again by its next use.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, type McpServerConnection } from '@agentmesh/protocol';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { McpServerError } from '../tool-errors.js';
import { createMcpTransport, type McpServerCredentials, type McpTransportDeps } from './mcp-transports.js';

export interface McpConnectionsOptions {
  readonly transports: McpTransportDeps;
  /** How long a tool list is reused when the server's definition sets no `list_ttl_ms`. */
  readonly listTtlMs: number;
  readonly idleMs: number;
  readonly maxSessions: number;
  /** Budget of connecting and listing. */
  readonly connectTimeoutMs: number;
  readonly now?: () => number;
}

export interface McpSession {
  readonly client: Client;
  readonly server: McpServerConnection;
}

interface PooledSession extends McpSession {
  readonly key: string;
  tools: Tool[] | undefined;
  listedAt: number;
  lastUsed: number;
  inFlight: number;
}

const CLIENT_INFO = { name: 'agentmesh-executor', version: '1.0.0' };

export class McpConnections {
  readonly #sessions = new Map<string, Promise<PooledSession>>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;

  constructor(private readonly options: McpConnectionsOptions) {
    this.#now = options.now ?? Date.now;
    this.#sweeper = setInterval(() => void this.#closeIdle(), Math.max(1_000, options.idleMs / 2));
    this.#sweeper.unref();
  }

  /** Sessions open now (or being opened). */
  get size(): number {
    return this.#sessions.size;
  }

  /** The server's tools, listed again when the list is older than its TTL. */
  async listTools(
    account: string,
    server: McpServerConnection,
    credentials: McpServerCredentials,
  ): Promise<Tool[]> {
    return this.use(account, server, credentials, async (session) => {
      const pooled = session as PooledSession;
      const ttl = server.list_ttl_ms ?? this.options.listTtlMs;
      if (pooled.tools !== undefined && this.#now() - pooled.listedAt < ttl) return pooled.tools;
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await session.client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: this.options.connectTimeoutMs,
        });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      pooled.tools = tools;
      pooled.listedAt = this.#now();
      return tools;
    });
  }

  /** Runs `work` on the account's session for the server, opening it first when needed. */
  async use<T>(
    account: string,
    server: McpServerConnection,
    credentials: McpServerCredentials,
    work: (session: McpSession) => Promise<T>,
  ): Promise<T> {
    if (this.#closed) throw new McpServerError('the executor is stopping');
    const key = sessionKey(account, server, credentials);
    let opening = this.#sessions.get(key);
    if (opening === undefined) {
      opening = this.#open(key, server, credentials);
      this.#sessions.set(key, opening);
      opening.catch(() => this.#sessions.delete(key));
      void this.#closeBeyondLimit();
    }
    const session = await opening;
    session.inFlight += 1;
    session.lastUsed = this.#now();
    try {
      return await work(session);
    } finally {
      session.inFlight -= 1;
      session.lastUsed = this.#now();
    }
  }

  /** Closes the session (after a broken exchange); the next use opens a new one. */
  async drop(account: string, server: McpServerConnection, credentials: McpServerCredentials): Promise<void> {
    const key = sessionKey(account, server, credentials);
    const session = this.#sessions.get(key);
    this.#sessions.delete(key);
    if (session !== undefined) await session.then((open) => open.client.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(
      sessions.map((session) => session.then((open) => open.client.close()).catch(() => undefined)),
    );
  }

  async #open(
    key: string,
    server: McpServerConnection,
    credentials: McpServerCredentials,
  ): Promise<PooledSession> {
    const holder: { session?: PooledSession } = {};
    const client = new Client(CLIENT_INFO, {
      listChanged: {
        tools: {
          onChanged: (error, tools) => {
            const session = holder.session;
            if (session === undefined) return;
            if (error !== null || tools === null) session.tools = undefined;
            else {
              session.tools = tools;
              session.listedAt = this.#now();
            }
          },
        },
      },
    });
    const transport = createMcpTransport(server, credentials, this.options.transports);
    // A transport that closed (server gone, process ended) takes its session out of the pool.
    client.onclose = () => {
      const current = this.#sessions.get(key);
      void current?.then(
        (open) => {
          if (open.client === client) this.#sessions.delete(key);
        },
        () => undefined,
      );
    };
    try {
      await client.connect(transport, { timeout: this.options.connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    holder.session = {
      key,
      client,
      server,
      tools: undefined,
      listedAt: 0,
      lastUsed: this.#now(),
      inFlight: 0,
    };
    return holder.session;
  }

  async #closeIdle(): Promise<void> {
    const cutoff = this.#now() - this.options.idleMs;
    for (const [key, opening] of this.#sessions) {
      const session = await opening.catch(() => undefined);
      if (session !== undefined && session.inFlight === 0 && session.lastUsed < cutoff) {
        this.#sessions.delete(key);
        await session.client.close().catch(() => undefined);
      }
    }
  }

  async #closeBeyondLimit(): Promise<void> {
    while (this.#sessions.size > this.options.maxSessions) {
      const open = await Promise.all(
        [...this.#sessions.entries()].map(async ([key, opening]) => ({
          key,
          session: await opening.catch(() => undefined),
        })),
      );
      const idle = open
        .filter(({ session }) => session !== undefined && session.inFlight === 0)
        .sort((a, b) => (a.session?.lastUsed ?? 0) - (b.session?.lastUsed ?? 0));
      const oldest = idle[0];
      if (oldest === undefined) return;
      this.#sessions.delete(oldest.key);
      await oldest.session?.client.close().catch(() => undefined);
    }
  }
}

/** Account, server and credential values: what must all be equal for two tasks to share a session. */
function sessionKey(account: string, server: McpServerConnection, credentials: McpServerCredentials): string {
  return createHash('sha256')
    .update(canonicalJson([account, server, credentials]))
    .digest('hex');
}
