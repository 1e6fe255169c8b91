import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { Client } from 'undici';
import { waitFor } from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { readEventStream, type AnswerReading } from './answer-reader.js';
import { AttemptDeadline } from './attempt-deadline.js';
import { AttemptFailure } from './attempt-failure.js';
import { StreamAccumulator } from './stream-accumulator.js';

const deadlines: AttemptDeadline[] = [];
afterEach(() => deadlines.splice(0).forEach((deadline) => deadline.dispose()));

function readingInto(accumulator: StreamAccumulator): AnswerReading {
  const deadline = new AttemptDeadline(undefined, 60_000, undefined);
  deadlines.push(deadline);
  return { accumulator, deadline, emit: () => undefined, scrub: (text) => text };
}

/** A response body that yields `pieces`, then dies the way a reset socket does. */
function bodyThatBreaksAfter(pieces: readonly string[]): Parameters<typeof readEventStream>[0] {
  async function* broken(): AsyncGenerator<Buffer> {
    for (const piece of pieces) yield Buffer.from(piece);
    throw Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
  }
  return Readable.from(broken()) as unknown as Parameters<typeof readEventStream>[0];
}

const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
const text = sse({ choices: [{ index: 0, delta: { content: 'Done.' }, finish_reason: null }] });
const finish = sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });

describe('reading an event stream', () => {
  it('when the connection dies after the finish reason, the answer counts as complete (only usage is lost)', async () => {
    const accumulator = new StreamAccumulator();

    await readEventStream(bodyThatBreaksAfter([text, finish]), readingInto(accumulator));

    expect(accumulator.result()).toMatchObject({ message: { content: 'Done.' }, finishReason: 'stop' });
  });

  it('when the connection dies before the finish reason, it is a retryable connection failure', async () => {
    const failure = await readEventStream(
      bodyThatBreaksAfter([text]),
      readingInto(new StreamAccumulator()),
    ).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AttemptFailure);
    expect(failure).toMatchObject({ retryable: true, reason: expect.stringContaining('other side closed') });
  });

  it('when the answer ends with [DONE] before the response does, the body is left unharmed and its connection serves the next call', async () => {
    const responses: ServerResponse[] = [];
    let connections = 0;
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`${text}${finish}data: [DONE]\n\n`);
      responses.push(response);
    });
    server.on('connection', () => connections++);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = new Client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      for (const call of [1, 2]) {
        const { body } = await client.request({ method: 'GET', path: '/' });
        const accumulator = new StreamAccumulator();
        await readEventStream(body, readingInto(accumulator));
        expect(accumulator.result()).toMatchObject({ message: { content: 'Done.' }, finishReason: 'stop' });
        // Not aborted: the rest of the response is read to its end once the server sends it.
        expect(body.errored).toBeNull();
        expect(responses).toHaveLength(call);
        const closed = once(body, 'close');
        responses[call - 1]?.end();
        await closed;
      }
      expect(connections).toBe(1);
    } finally {
      await client.close();
      server.close();
    }
  });

  it('while the caller holds back (backpressure), the body is paused; once it lets go, the rest is read', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(text);
      // The rest arrives while the caller still holds back.
      setImmediate(() => response.end(`${finish}data: [DONE]\n\n`));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = new Client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const { body } = await client.request({ method: 'GET', path: '/' });
      const accumulator = new StreamAccumulator();
      let letGo!: () => void;
      const held = new Promise<void>((resolve) => (letGo = resolve));
      let heldBack = false;
      const reading: AnswerReading = {
        ...readingInto(accumulator),
        backpressure: () => {
          if (heldBack) return undefined;
          heldBack = true;
          return held;
        },
      };
      const read = readEventStream(body, reading);
      await waitFor(() => heldBack);
      expect(body.isPaused()).toBe(true);
      expect(accumulator.isFinished).toBe(false);
      letGo();
      await read;
      expect(accumulator.result()).toMatchObject({ message: { content: 'Done.' }, finishReason: 'stop' });
    } finally {
      await client.close();
      server.close();
    }
  });

  it('a body closed before its end without an error is a retryable connection failure', async () => {
    const body = new Readable({ read: () => undefined });
    body.push(text);
    setImmediate(() => body.destroy());

    const failure = await readEventStream(
      body as unknown as Parameters<typeof readEventStream>[0],
      readingInto(new StreamAccumulator()),
    ).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AttemptFailure);
    expect(failure).toMatchObject({
      retryable: true,
      reason: expect.stringContaining('Premature close'),
    });
  });

  it("an error thrown by the caller's callback ends the reading as it is", async () => {
    const mine = new Error('the sink is gone');
    const failure = await readEventStream(bodyThatBreaksAfter([text, finish]), {
      ...readingInto(new StreamAccumulator()),
      emit: () => {
        throw mine;
      },
    }).catch((error: unknown) => error);

    expect(failure).toBe(mine);
  });

  it('a body that closed before the reading began is a retryable failure, not a wait for ever', async () => {
    const body = new Readable({ read: () => undefined });
    body.destroy();
    await once(body, 'close');

    const failure = await readEventStream(
      body as unknown as Parameters<typeof readEventStream>[0],
      readingInto(new StreamAccumulator()),
    ).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AttemptFailure);
    expect(failure).toMatchObject({ retryable: true });
  });
});
