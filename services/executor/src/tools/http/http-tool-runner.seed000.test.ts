// Seed 000 end to end: the document's own 企查查 plugin, unchanged except for where its API lives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { seed000ToolAt } from '../__fixtures__/http-tools.js';
import { validateToolArguments } from '../argument-validation.js';
import { HttpToolRunner } from './http-tool-runner.js';

describe('seed 000 blind execution of the 企查查 plugin', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;
  const companies = { Status: '200', Result: [{ Name: '北京字节跳动科技有限公司', OperName: '张利东' }] };

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [{ method: 'GET', path: '/ECIV4/Search', reply: { body: companies } }],
    });
    runner = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  it('when the model searches a company, the API gets both credential headers and the query, and the model gets its JSON', async () => {
    const tool = seed000ToolAt(api.url);
    const checked = validateToolArguments(tool.parameters, { keyword: '字节跳动' });
    if (!checked.ok) throw new Error(checked.error.message);

    const outcome = await runner.run(tool, checked.value, {
      vault: { QCC_KEY: 'sk-qcc-123456', QCC_SECRET: '1717171717' },
    });

    expect(outcome).toEqual({ ok: true, result: companies });
    const [request] = await api.waitForRequests(1);
    expect(request?.method).toBe('GET');
    expect(request?.headers.token).toBe('sk-qcc-123456');
    expect(request?.headers.timespan).toBe('1717171717');
    expect(request?.query).toEqual({ keyword: '字节跳动', page_index: '1' });
    expect(request?.bodyText).toBe('');
  });
});
