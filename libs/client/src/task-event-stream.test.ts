import type { TaskEvent } from '@agentmesh/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chunkEvent,
  closedPort,
  connectionClosed,
  deferred,
  doneEvent,
  errorEvent,
  sendJson,
  sendSse,
  sendSseThenCut,
  SSE_HEADERS,
  sseFrame,
  startStandInGateway,
  TRACE_ID,
  type StandInGateway,
} from './__fixtures__/stand-in-gateway.js';
import { MeshApiError, MeshProtocolError, MeshUnreachableError } from './errors.js';
import { MeshClient } from './mesh-client.js';

let gateway: StandInGateway;
let client: MeshClient;
// Reconnections in tests wait milliseconds, not seconds.
const FAST_RECONNECT = { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 };

beforeEach(async () => {
  gateway = await startStandInGateway();
  client = new MeshClient({ baseUrl: gateway.url, apiKey: 'am_test_key', reconnect: FAST_RECONNECT });
});

afterEach(async () => {
  await gateway.stop();
});

async function collect(events: AsyncIterable<TaskEvent>): Promise<TaskEvent[]> {
  const seen: TaskEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

const seqs = (events: readonly TaskEvent[]): number[] => events.map((event) => event.seq);
const lastEventIds = (): (string | undefined)[] =>
  gateway.requests.map((request) => request.headers['last-event-id'] as string | undefined);

describe('MeshClient.events', () => {
  it('when the stream comes in chunks cut inside lines, inside CRLF and inside a UTF-8 character, every event is read whole', async () => {
    const events = [chunkEvent(1, '字节跳动 was '), chunkEvent(2, 'founded in 2012.'), doneEvent(3, 'done')];
    const text =
      ': ping\r\n\r\nretry: 10\r\n' +
      events.map((event) => sseFrame(event).replaceAll('\n', '\r\n')).join(': ping\n\n');
    const bytes = Buffer.from(text, 'utf8');
    // A cut in the middle of 字 (3 bytes in UTF-8), one between CR and LF, and a few more.
    const cuts = [3, 9, bytes.indexOf('字') + 1, bytes.indexOf('\r\n', 40) + 1, bytes.length - 3];
    gateway.handle((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      let from = 0;
      for (const at of [...cuts].sort((a, b) => a - b)) {
        response.write(bytes.subarray(from, at));
        from = at;
      }
      response.end(bytes.subarray(from));
    });

    const seen = await collect(client.events(TRACE_ID));

    expect(seen).toEqual(events);
    expect(gateway.requests).toHaveLength(1);
    expect(gateway.requests[0]!.path).toBe(`/v1/tasks/${TRACE_ID}/events`);
    expect(gateway.requests[0]!.headers.authorization).toBe('Bearer am_test_key');
    expect(gateway.requests[0]!.headers.accept).toBe('text/event-stream');
  });

  it('when the gateway cuts the stream mid-event, the client resumes with Last-Event-ID and yields each event once', async () => {
    const all = [
      chunkEvent(1, 'a'),
      chunkEvent(2, 'b'),
      chunkEvent(3, 'c'),
      chunkEvent(4, 'd'),
      doneEvent(5, 'abcd'),
    ];
    const cut = deferred();
    gateway.handle(async (request, response, index) => {
      if (index === 0) {
        // Events 1-3 whole, then half of event 4.
        const partial = sseFrame(all[3]!).slice(0, 20);
        await sendSseThenCut(response, all.slice(0, 3).map(sseFrame).join('') + partial, cut.promise);
        return;
      }
      // The resumed stream replays from event 2, as a careless server might: the client must skip it.
      expect(request.headers['last-event-id']).toBe('3');
      sendSse(response, all.slice(1).map(sseFrame).join(''));
    });

    const seen: TaskEvent[] = [];
    for await (const event of client.events(TRACE_ID)) {
      seen.push(event);
      if (event.seq === 3) cut.resolve();
    }

    expect(seqs(seen)).toEqual([1, 2, 3, 4, 5]);
    expect(lastEventIds()).toEqual([undefined, '3']);
  });

  it('when a resumed stream ends with 204, the iteration ends after the events already seen', async () => {
    const cut = deferred();
    gateway.handle(async (_request, response, index) => {
      if (index === 0) return sendSseThenCut(response, sseFrame(chunkEvent(1, 'a')), cut.promise);
      response.writeHead(204).end();
    });

    const seen: TaskEvent[] = [];
    for await (const event of client.events(TRACE_ID)) {
      seen.push(event);
      cut.resolve();
    }

    expect(seqs(seen)).toEqual([1]);
    expect(lastEventIds()).toEqual([undefined, '1']);
  });

  it('when asked to resume after the last event of a finished task, the 204 ends the iteration with no event', async () => {
    gateway.handle((_request, response) => void response.writeHead(204).end());

    const seen = await collect(client.events(TRACE_ID, { lastEventId: 7 }));

    expect(seen).toEqual([]);
    expect(lastEventIds()).toEqual(['7']);
  });

  it('when the task ends with an error event, the iteration ends there and does not reconnect', async () => {
    gateway.handle(
      (_request, response) =>
        // The connection stays open after the terminal event; the client must stop on its own.
        void response
          .writeHead(200, SSE_HEADERS)
          .write(sseFrame(errorEvent(1, 'LLM_ERROR', 'model refused'))),
    );

    const seen = await collect(client.events(TRACE_ID));

    expect(seen.map((event) => event.type)).toEqual(['error']);
    // The frame said so the way the gateway names it now.
    expect(sseFrame(errorEvent(1, 'LLM_ERROR', 'x'))).toContain('event: task_error\n');
    expect(gateway.requests).toHaveLength(1);
    await connectionClosed(gateway.requests[0]!);
  });

  it("when a resumed stream answers 410 EVENTS_EXPIRED (the task's events are gone), events throws MeshApiError with the final status and stops reconnecting", async () => {
    const cut = deferred();
    const finalStatus = { trace_id: TRACE_ID, status: 'done', last_seq: 3 };
    gateway.handle(async (_request, response, index) => {
      if (index === 0) return sendSseThenCut(response, sseFrame(chunkEvent(1, 'a')), cut.promise);
      sendJson(response, 410, {
        code: 'EVENTS_EXPIRED',
        message: `the events of task ${TRACE_ID} are no longer kept`,
        detail: { status: finalStatus },
      });
    });

    const seen: TaskEvent[] = [];
    const error = await (async () => {
      for await (const event of client.events(TRACE_ID)) {
        seen.push(event);
        cut.resolve();
      }
    })().catch((caught: unknown) => caught);

    expect(seqs(seen)).toEqual([1]);
    expect(error).toBeInstanceOf(MeshApiError);
    expect(error).toMatchObject({
      code: 'EVENTS_EXPIRED',
      status: 410,
      retryable: false,
      detail: { status: finalStatus },
    });
    expect(lastEventIds()).toEqual([undefined, '1']);
  });

  it('when the gateway answers an error body, events throws MeshApiError with its code and status', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 404, { code: 'NOT_FOUND', message: `no task ${TRACE_ID}` }),
    );

    const error = await collect(client.events(TRACE_ID)).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshApiError);
    expect(error).toMatchObject({
      code: 'NOT_FOUND',
      status: 404,
      retryable: false,
      message: `no task ${TRACE_ID}`,
    });
  });

  it('when a gateway of before the task_error name sends an error event as `event: error`, the iteration still yields it and ends', async () => {
    const old = errorEvent(2, 'LLM_ERROR', 'model refused');
    gateway.handle((_request, response) =>
      sendSse(
        response,
        sseFrame(chunkEvent(1, 'a')) + `id: 2\nevent: error\ndata: ${JSON.stringify(old)}\n\n`,
      ),
    );

    const seen = await collect(client.events(TRACE_ID));

    expect(seen.map((event) => event.type)).toEqual(['message_chunk', 'error']);
  });

  it('when an event is named for another type than its data says, events throws MeshProtocolError', async () => {
    const chunk = chunkEvent(1, 'a');
    gateway.handle((_request, response) =>
      sendSse(response, `id: 1\nevent: done\ndata: ${JSON.stringify(chunk)}\n\n`),
    );

    await expect(collect(client.events(TRACE_ID))).rejects.toThrow(/named done.*message_chunk/);
  });

  it('when an event does not match the TaskEvent schema, events throws MeshProtocolError naming the field', async () => {
    const broken = { ...chunkEvent(2, 'x'), seq: 'two' };
    gateway.handle((_request, response) =>
      sendSse(response, sseFrame(chunkEvent(1, 'ok')) + `id: 2\ndata: ${JSON.stringify(broken)}\n\n`),
    );

    const seen: TaskEvent[] = [];
    const error = await (async () => {
      for await (const event of client.events(TRACE_ID)) seen.push(event);
    })().catch((caught: unknown) => caught);

    expect(seqs(seen)).toEqual([1]);
    expect(error).toBeInstanceOf(MeshProtocolError);
    expect((error as MeshProtocolError).message).toMatch(/seq/);
    expect(error).toMatchObject({ code: 'INTERNAL', retryable: false });
    // A broken contract is not retried.
    expect(gateway.requests).toHaveLength(1);
  });

  it('when an event is not JSON, events throws MeshProtocolError', async () => {
    gateway.handle((_request, response) => sendSse(response, 'id: 1\ndata: {not json\n\n'));

    await expect(collect(client.events(TRACE_ID))).rejects.toThrow(MeshProtocolError);
  });

  it('when an event belongs to another task, events throws MeshProtocolError', async () => {
    const other = { ...chunkEvent(1, 'x'), trace_id: 'a'.repeat(32) };
    gateway.handle((_request, response) => sendSse(response, sseFrame(other)));

    await expect(collect(client.events(TRACE_ID))).rejects.toThrow(/belongs to task a{32}/);
  });

  it('when nothing listens on the port, events throws MeshUnreachableError at once', async () => {
    const unreachable = new MeshClient({ baseUrl: `http://127.0.0.1:${await closedPort()}` });

    const error = await collect(unreachable.events(TRACE_ID)).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshUnreachableError);
    expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    expect((error as Error).cause).toBeDefined();
  });

  it('when every reconnection brings no new event, the client gives up after maxAttempts with MeshUnreachableError', async () => {
    const cut = deferred();
    gateway.handle((_request, response, index) =>
      sendSseThenCut(response, index === 0 ? sseFrame(chunkEvent(1, 'a')) : ': ping\n\n', cut.promise),
    );

    const seen: TaskEvent[] = [];
    const error = await (async () => {
      for await (const event of client.events(TRACE_ID)) {
        seen.push(event);
        cut.resolve();
      }
    })().catch((caught: unknown) => caught);

    expect(seqs(seen)).toEqual([1]);
    expect(error).toBeInstanceOf(MeshUnreachableError);
    expect((error as Error).message).toMatch(/4 times in a row/);
    expect((error as Error).cause).toBeInstanceOf(MeshUnreachableError);
    // The first connection and maxAttempts (3) reconnections, each resuming after event 1.
    expect(lastEventIds()).toEqual([undefined, '1', '1', '1']);
  });

  it('when a reconnection answers a retryable error body, it counts as a failed attempt and the next one resumes', async () => {
    const cut = deferred();
    gateway.handle(async (_request, response, index) => {
      if (index === 0) return sendSseThenCut(response, sseFrame(chunkEvent(1, 'a')), cut.promise);
      if (index === 1)
        return sendJson(response, 502, { code: 'SERVICE_UNAVAILABLE', message: 'NATS is down' });
      sendSse(response, sseFrame(doneEvent(2, 'a')));
    });

    const seen: TaskEvent[] = [];
    for await (const event of client.events(TRACE_ID)) {
      seen.push(event);
      cut.resolve();
    }

    expect(seqs(seen)).toEqual([1, 2]);
    expect(lastEventIds()).toEqual([undefined, '1', '1']);
  });

  it('when the connection goes silent past the idle timeout, the client reconnects and finishes', async () => {
    const idleClient = new MeshClient({
      baseUrl: gateway.url,
      reconnect: FAST_RECONNECT,
      idleTimeoutMs: 1_000,
    });
    gateway.handle((_request, response, index) => {
      response.writeHead(200, SSE_HEADERS);
      // The first connection sends one event and then nothing, not even a heartbeat, until closed.
      if (index === 0) response.write(sseFrame(chunkEvent(1, 'a')));
      else response.end(sseFrame(doneEvent(2, 'a')));
    });

    const seen = await collect(idleClient.events(TRACE_ID));

    expect(seqs(seen)).toEqual([1, 2]);
    expect(lastEventIds().slice(0, 2)).toEqual([undefined, '1']);
    // The silent connection was closed by the client.
    await connectionClosed(gateway.requests[0]!);
  });

  it('when the signal aborts mid-stream, the iteration throws the abort reason and the connection is closed', async () => {
    gateway.handle(
      (_request, response) => void response.writeHead(200, SSE_HEADERS).write(sseFrame(chunkEvent(1, 'a'))),
    );
    const abort = new AbortController();

    const seen: TaskEvent[] = [];
    const error = await (async () => {
      for await (const event of client.events(TRACE_ID, { signal: abort.signal })) {
        seen.push(event);
        abort.abort(new Error('user pressed Ctrl-C'));
      }
    })().catch((caught: unknown) => caught);

    expect(seqs(seen)).toEqual([1]);
    expect((error as Error).message).toBe('user pressed Ctrl-C');
    await connectionClosed(gateway.requests[0]!);
    expect(gateway.requests).toHaveLength(1);
  });

  it('when the consumer stops iterating early, the connection is closed', async () => {
    gateway.handle(
      (_request, response) =>
        void response
          .writeHead(200, SSE_HEADERS)
          .write(sseFrame(chunkEvent(1, 'a')) + sseFrame(chunkEvent(2, 'b'))),
    );

    for await (const event of client.events(TRACE_ID)) {
      expect(event.seq).toBe(1);
      break;
    }

    await connectionClosed(gateway.requests[0]!);
    expect(gateway.requests).toHaveLength(1);
  });
});
