import { Readable } from 'node:stream';
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
});
