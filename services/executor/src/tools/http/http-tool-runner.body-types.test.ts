// Seed 000 bodies beyond JSON and forms: multipart/form-data, text/plain and XML, as an API receives them.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { httpTool } from '../__fixtures__/http-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';

describe('HttpToolRunner request bodies by content_type', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;
  const ctx = { vault: {} };

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [{ method: '*', path: '/v1/items', reply: { body: { ok: true } } }],
    });
    runner = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  });
  beforeEach(() => {
    api.requests.length = 0;
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  const toolWith = (contentType: string) =>
    httpTool({ method: 'POST', url: `${api.url}/v1/items`, content_type: contentType });

  it('when a tool sends multipart/form-data, each argument is a part (nested ones as a[b]) and the content type carries the boundary', async () => {
    const outcome = await runner.run(
      toolWith('multipart/form-data'),
      { name: 'lamp & co', address: { city: 'Köln' }, tags: ['a', 'b'] },
      ctx,
    );

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    const contentType = String(request?.headers['content-type'] ?? '');
    expect(contentType).toMatch(/^multipart\/form-data; boundary=/);
    // Parsed back by a real multipart parser, as the API would.
    const form = await new Response(request?.bodyText, {
      headers: { 'content-type': contentType },
    }).formData();
    expect(form.get('name')).toBe('lamp & co');
    expect(form.get('address[city]')).toBe('Köln');
    expect(form.getAll('tags')).toEqual(['a', 'b']);
  });

  it('when a tool sends text/plain, the one body argument is the body as it is', async () => {
    await runner.run(toolWith('text/plain; charset=utf-8'), { note: 'line 1\nline 2 <&>' }, ctx);

    const [request] = await api.waitForRequests(1);
    expect(request?.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(request?.bodyText).toBe('line 1\nline 2 <&>');
  });

  it('when the model gives a text/plain tool two body arguments, it gets INVALID_REQUEST naming them and nothing is sent', async () => {
    const outcome = await runner.run(toolWith('text/plain'), { a: 'x', b: 'y' }, ctx);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    expect(JSON.stringify(outcome)).toMatch(/a, b/);
    expect(api.requests).toHaveLength(0);
  });

  it('when a tool sends application/xml, one object argument is the root element, arrays repeat, and text cannot open an element', async () => {
    await runner.run(
      toolWith('application/xml'),
      { Order: { id: 7, note: '</note><admin>1</admin>', items: [{ sku: 'a' }, { sku: 'b' }], gift: null } },
      ctx,
    );

    const [request] = await api.waitForRequests(1);
    expect(request?.headers['content-type']).toBe('application/xml');
    expect(request?.bodyText).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Order><id>7</id>' +
        '<note>&lt;/note&gt;&lt;admin&gt;1&lt;/admin&gt;</note>' +
        '<items><sku>a</sku></items><items><sku>b</sku></items><gift/></Order>',
    );
  });

  it('when an XML tool gets several body arguments, they are wrapped in <request>; a name XML cannot carry is refused', async () => {
    await runner.run(toolWith('text/xml'), { a: 1, b: true }, ctx);
    const [request] = await api.waitForRequests(1);
    expect(request?.bodyText).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><request><a>1</a><b>true</b></request>',
    );

    const refused = await runner.run(toolWith('application/soap+xml'), { 'bad name': 1 }, ctx);
    expect(refused).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
  });
});
