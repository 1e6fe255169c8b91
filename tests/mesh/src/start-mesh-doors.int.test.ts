/**
 * Issue 21, "npm start opens every door": `npm start` (the script on this checkout's build, started from
 * another directory) prints an account API key and one ready line per way in, and each line, pasted
 * verbatim into a shell in a fresh directory with nothing but a plain PATH (whose `node` is the system's
 * Node 20, not the mesh's), gets the demo task to `done`: curl + SSE, the clone's CLI by absolute path,
 * the NATS line; the console in headless chromium with the printed URL and key; the official `openai`
 * package with the printed variables; the MCP SDK client with the printed URL and header. No printed
 * line asks a registry for a package (`npx`).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import OpenAI from 'openai';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  lineAfter,
  paste,
  printedValue,
  startMeshScript,
  stopAllMeshScripts,
  type StartedMesh,
} from './start-mesh-run.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// What the demo's scripted model answers once its lookup tool answered.
const ANSWER = /\[DEMO MODEL\] The lookup tool answered: .*ByteDance Ltd\./;

let mesh: StartedMesh;
let output: string;
let accountKey: string;

beforeAll(async () => {
  mesh = await startMeshScript();
  output = mesh.output();
  accountKey = printedValue(output, /account API key of account `acme` for this run \([^)]*\):/);
}, 120_000);

afterAll(async () => {
  await stopAllMeshScripts();
});

describe('npm start prints one ready line per door, each reaching done pasted verbatim elsewhere', () => {
  it('when the printed curl line is pasted, it submits the demo task and its SSE stream ends with done', async () => {
    const pasted = await paste(lineAfter(output, 'curl:'));
    expect(pasted.code).toBe(0);
    expect(pasted.stdout).toMatch(/^event: done$/m);
    expect(pasted.stdout).toMatch(ANSWER);
  });

  it('when the printed CLI line is pasted, the CLI follows the task to done (exit 0) without any registry', async () => {
    const line = lineAfter(output, 'the agentmesh CLI');
    expect(line).not.toMatch(/\bnpx\b/);
    const pasted = await paste(line);
    expect(pasted.stderr).toMatch(/demo_company_lookup ok/);
    expect(pasted.code).toBe(0);
    expect(pasted.stdout).toMatch(ANSWER);
  });

  it('when the printed NATS line is pasted, it prints every event of the task up to done (exit 0), with no nats CLI', async () => {
    const pasted = await paste(lineAfter(output, 'NATS, with this clone alone'));
    expect(pasted.code).toBe(0);
    const events = pasted.stdout
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text) as { seq: number; type: string });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)?.type).toBe('done');
    expect(pasted.stdout).toMatch(ANSWER);
  });

  it('when the official openai package takes the printed variables and model, the completion is the demo answer', async () => {
    const line = lineAfter(output, 'an OpenAI client');
    // The shell line itself sets what the SDK reads.
    const pasted = await paste(line, ' && printf "%s\\n%s\\n" "$OPENAI_BASE_URL" "$OPENAI_API_KEY"');
    expect(pasted.code).toBe(0);
    const [baseURL, apiKey] = pasted.stdout.trim().split('\n');
    const model = /model (\S+);/.exec(output)?.[1];
    expect(model).toBe('demo_agent');
    const openai = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: model!,
      messages: [{ role: 'user', content: 'Tell me about ByteDance' }],
    });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.choices[0]?.message.content).toMatch(ANSWER);
  });

  it("when the MCP SDK client takes the printed config's URL and header, calling run_demo_agent answers the demo answer", async () => {
    const config = JSON.parse(lineAfter(output, 'an MCP client')) as {
      mcpServers: { agentmesh: { url: string; headers: Record<string, string> } };
    };
    const { url, headers } = config.mcpServers.agentmesh;
    const client = new Client({ name: 'start-mesh-doors-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('run_demo_agent');
      const result = (await client.callTool({
        name: 'run_demo_agent',
        arguments: { message: 'Tell me about ByteDance' },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toMatch(/The lookup tool answered/);
    } finally {
      await client.close();
    }
  });

  it.skipIf(!existsSync(CHROMIUM))(
    'when the printed console URL is opened in chromium and the printed key pasted, the demo task shows done with its answer',
    async () => {
      const consoleUrl = /the web console: open (\S+),/.exec(output)?.[1];
      expect(consoleUrl).toBe(`${mesh.gatewayUrl}/console`);
      const profile = mkdtempSync(join(tmpdir(), 'agentmesh-chromium-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-sync'],
      });
      try {
        const page = context.pages()[0] ?? (await context.newPage());
        await page.goto(consoleUrl!);
        await page.getByLabel('API key', { exact: true }).fill(accountKey);
        await page.getByRole('button', { name: 'Use key' }).click();
        const agent = page.getByLabel('Agent', { exact: true });
        await agent.locator('option[value="demo_agent"]').waitFor({ state: 'attached', timeout: 15_000 });
        await agent.selectOption('demo_agent');
        await page.getByLabel('Message', { exact: true }).fill('Tell me about ByteDance');
        await page.getByRole('button', { name: 'Send' }).click();
        await page.locator('#task-status', { hasText: /^(done|error)$/ }).waitFor({ timeout: 30_000 });
        expect(await page.locator('#task-status').textContent()).toBe('done');
        expect(await page.locator('#answer').textContent()).toMatch(ANSWER);
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      }
    },
  );

  it('each service gets a metrics line of its own, on a port of its own, that serves its metrics', async () => {
    const lines = [...output.matchAll(/^\[mesh\] (\S+) metrics: (http:\/\/127\.0\.0\.1:(\d+)\/metrics)$/gm)];
    const services = lines.map((match) => match[1]);
    expect(services).toEqual(expect.arrayContaining(['gateway', 'assembler', 'executor']));
    expect(new Set(lines.map((match) => match[3])).size).toBe(lines.length);
    for (const [, service, url] of lines) {
      const response = await fetch(url!);
      expect(response.status, `${service} at ${url}`).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      // The gateway has counted the doors' tasks by now; each other service answers its own exposition.
      if (service === 'gateway') expect(await response.text()).toMatch(/^[a-z_]+_total\{/m);
      else await response.text();
    }
  });

  it('no printed line runs npx or npm exec, which would ask a registry for the package', () => {
    expect(output).not.toMatch(/^ {2}.*\b(npx|npm exec)\b/m);
  });
});
