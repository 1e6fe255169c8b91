import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { seedFixture } from './__fixtures__/assembly.js';
import { MAX_TOOL_FILE_BYTES, readToolFiles } from './tool-files.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'assembler-tools-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function put(path: string, content: unknown): Promise<void> {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
}

describe('reading a tool directory', () => {
  it('a seed 000 plugin and a seed 003 *.tool.json in a sub-directory are read as canonical tools, sorted by path', async () => {
    await put('scripts/python.tool.json', seedFixture('003-s2.2.3-execute-python-script.tool.json'));
    await put('qichacha.json', seedFixture('000-s2-plugin.json'));

    const scan = await readToolFiles(dir);

    expect(scan.listed).toBe(true);
    expect(scan.rejected).toEqual([]);
    expect(
      scan.tools.map(({ path, format, tool }) => ({ path, format, name: tool.name, type: tool.type })),
    ).toEqual([
      { path: 'qichacha.json', format: 'http-plugin', name: 'search_company_basic', type: 'HTTP' },
      {
        path: 'scripts/python.tool.json',
        format: 'tool-json',
        name: 'core__execute-python-script',
        type: 'SCRIPT',
      },
    ]);
  });

  it('malformed JSON, an unknown format and an invalid plugin are each reported with a reason, and the valid file is still read', async () => {
    await put('a-broken.json', '{"name": "half');
    await put('b-unknown.json', { hello: 'world' });
    const plugin = seedFixture('000-s2-plugin.json') as { execution: Record<string, unknown> };
    await put('c-bad-method.json', { ...plugin, execution: { ...plugin.execution, method: 'TELEPORT' } });
    await put('d-good.json', seedFixture('000-s3-sys-ai-plugin-row.json'));
    await put('notes.txt', 'not a tool file, not even looked at');

    const scan = await readToolFiles(dir);

    expect(scan.tools.map(({ path }) => path)).toEqual(['d-good.json']);
    expect(scan.rejected).toEqual([
      { path: 'a-broken.json', reason: expect.stringMatching(/^not valid JSON/) },
      { path: 'b-unknown.json', reason: expect.stringMatching(/^not a recognised tool format/) },
      {
        path: 'c-bad-method.json',
        reason: expect.stringMatching(/^invalid http-plugin definition: execution\.method/),
      },
    ]);
  });

  it('an AGENT tool file is reported with a reason naming sub_agents and not read as a tool', async () => {
    await put('agent.json', {
      type: 'AGENT',
      name: 'agent_helper',
      description: 'asks the helper',
      parameters: { type: 'object', properties: { input: { type: 'string' } } },
      workflow_id: 'helper',
    });

    const scan = await readToolFiles(dir);

    expect(scan.tools).toEqual([]);
    expect(scan.rejected).toEqual([{ path: 'agent.json', reason: expect.stringContaining('sub_agents') }]);
  });

  it('a file larger than the limit is refused unread', async () => {
    await put('huge.json', `{"pad": "${'x'.repeat(MAX_TOOL_FILE_BYTES)}"}`);
    const scan = await readToolFiles(dir);
    expect(scan.rejected).toEqual([{ path: 'huge.json', reason: expect.stringContaining('larger than') }]);
  });

  it('a directory that does not exist is reported as not listed, not thrown', async () => {
    const missing = join(dir, 'nope');
    const scan = await readToolFiles(missing);
    expect(scan.listed).toBe(false);
    expect(scan.tools).toEqual([]);
    expect(scan.rejected).toEqual([{ path: missing, reason: expect.stringContaining('cannot be read') }]);
  });
});
