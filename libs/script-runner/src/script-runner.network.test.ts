// Network for scripts: none by default; with hosts granted, a run still has no direct network and
// reaches exactly the granted hosts through its filtering proxy. Only loopback servers are used.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptExecutionResult } from './script-runner.js';
import { createWorkspace, hostCapabilities, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;
const servers: (Server | HttpServer)[] = [];
/** Raw TCP servers that answer "pong from <address>", and HTTP servers that answer "hello from <address>". */
const pong: Record<string, number> = {};
const hello: Record<string, number> = {};
const ADDRESSES = ['127.0.0.1', '127.0.0.2'] as const;

async function listen(server: Server | HttpServer, address: string): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  workspace = await createWorkspace();
  for (const address of ADDRESSES) {
    pong[address] = await listen(
      createServer((socket) => socket.end(`pong from ${address}`)),
      address,
    );
    hello[address] = await listen(
      createHttpServer((_request, response) => response.end(`hello from ${address}`)),
      address,
    );
  }
});
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  await workspace.remove();
});

const capabilities = await hostCapabilities();
const unavailable = capabilities.isolationUnavailable ?? capabilities.networkUnavailable;
const skipReason = unavailable === undefined ? '' : ` (skipped: ${unavailable})`;

type Outcome = { ok?: string; error?: string };

function attempts(
  runner: ReturnType<Workspace['runner']>,
  allowHosts: string[] | undefined,
  list: { via: 'direct' | 'connect' | 'http'; host: string; port: number }[],
): Promise<ScriptExecutionResult> {
  return runner.run({
    toolId: 'test:egress',
    scriptPath: 'egress.py',
    language: 'python',
    inputData: { attempts: list },
    ...(allowHosts === undefined ? {} : { securityContext: { networkAccess: { allowHosts } } }),
  });
}

function outcomes(result: ScriptExecutionResult): Record<string, Outcome> {
  expect(result.error).toBeUndefined();
  return result.outputData as Record<string, Outcome>;
}

describe.skipIf(unavailable !== undefined)(`network access${skipReason}`, () => {
  it('when the tool declares no network access, a connection to a listening local server fails', async () => {
    const runner = workspace.runner({ allowNetworkHosts: ['127.0.0.1'] });

    const result = await attempts(runner, undefined, [
      { via: 'direct', host: '127.0.0.1', port: pong['127.0.0.1'] ?? 0 },
    ]);

    expect(outcomes(result)[`direct 127.0.0.1:${pong['127.0.0.1']}`]?.error).toBeDefined();
  });

  it('when the tool asks for a host the global policy does not allow, the connection fails and the logs say why', async () => {
    const runner = workspace.runner({ allowNetworkHosts: ['api.example.com'] });

    const result = await attempts(
      runner,
      ['127.0.0.1'],
      [{ via: 'direct', host: '127.0.0.1', port: pong['127.0.0.1'] ?? 0 }],
    );

    expect(outcomes(result)[`direct 127.0.0.1:${pong['127.0.0.1']}`]?.error).toBeDefined();
    expect(result.logs?.join('\n')).toContain('network access refused by the global policy for 127.0.0.1');
  });

  it('when a tool may reach 127.0.0.1 only, it reaches it through the proxy and 127.0.0.2 not at all, though the policy allows both', async () => {
    const runner = workspace.runner({ allowNetworkHosts: ['127.0.0.1', '127.0.0.2'] });
    const [allowed, other] = ADDRESSES;

    const result = await attempts(
      runner,
      [allowed],
      [
        { via: 'connect', host: allowed, port: pong[allowed] ?? 0 },
        { via: 'http', host: allowed, port: hello[allowed] ?? 0 },
        { via: 'connect', host: other, port: pong[other] ?? 0 },
        { via: 'http', host: other, port: hello[other] ?? 0 },
        { via: 'direct', host: allowed, port: pong[allowed] ?? 0 },
        { via: 'direct', host: other, port: pong[other] ?? 0 },
      ],
    );

    const seen = outcomes(result);
    expect(seen[`connect ${allowed}:${pong[allowed]}`]).toEqual({ ok: `pong from ${allowed}` });
    expect(seen[`http ${allowed}:${hello[allowed]}`]).toEqual({ ok: `hello from ${allowed}` });
    expect(seen[`connect ${other}:${pong[other]}`]?.error).toContain('403');
    expect(seen[`http ${other}:${hello[other]}`]?.error).toContain('403');
    // No way around the proxy: the run's network namespace has only its own loopback.
    expect(seen[`direct ${allowed}:${pong[allowed]}`]?.error).toBeDefined();
    expect(seen[`direct ${other}:${pong[other]}`]?.error).toBeDefined();
    expect(JSON.stringify(seen)).not.toContain(`from ${other}`);
    expect(result.logs?.join('\n')).toContain(
      `network: refused ${other}:${pong[other]}: not in the tool's networkAccess.allowHosts`,
    );
  });

  it('when the policy allows any host (*), a tool asking for any host still cannot reach loopback addresses', async () => {
    const runner = workspace.runner({ allowNetworkHosts: ['*'] });

    const result = await attempts(
      runner,
      ['*'],
      [
        { via: 'connect', host: '127.0.0.1', port: pong['127.0.0.1'] ?? 0 },
        { via: 'connect', host: 'localhost', port: pong['127.0.0.1'] ?? 0 },
      ],
    );

    const seen = outcomes(result);
    expect(seen[`connect 127.0.0.1:${pong['127.0.0.1']}`]?.error).toContain('403');
    expect(seen[`connect localhost:${pong['127.0.0.1']}`]?.error).toContain('403');
    expect(result.logs?.join('\n')).toContain('which the policy must name explicitly');
  });
});
