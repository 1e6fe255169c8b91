import { describe, expect, it } from 'vitest';
import { OpenAiRefusal } from '../openai/openai-errors.js';
import { parseResponseRequest, responseIdOf, traceIdOfResponse } from './response-request.js';

const traceId = 'cd'.repeat(16);

describe('response requests', () => {
  it('input as a string is one user message after the instructions; a pinned version is the workflow ref', () => {
    const task = parseResponseRequest({
      model: 'helper@3',
      input: 'hi',
      instructions: 'Be brief.',
      user: 'u1',
    });
    expect(task).not.toBeInstanceOf(OpenAiRefusal);
    expect(task).toMatchObject({
      model: 'helper@3',
      thread: { kind: 'new' },
      submission: {
        workflow_id: 'helper@3',
        user_id: 'u1',
        messages: [
          { role: 'developer', content: 'Be brief.' },
          { role: 'user', content: 'hi' },
        ],
      },
    });
  });

  it('previous_response_id names the trace; conversation a thread; both at once are refused', () => {
    expect(
      parseResponseRequest({ model: 'm', input: 'x', previous_response_id: responseIdOf(traceId) }),
    ).toMatchObject({
      thread: { kind: 'previous_response', traceId },
    });
    expect(parseResponseRequest({ model: 'm', input: 'x', conversation: { id: 'th_9' } })).toMatchObject({
      thread: { kind: 'conversation', threadId: 'th_9' },
    });
    const both = parseResponseRequest({
      model: 'm',
      input: 'x',
      previous_response_id: 'resp_x',
      conversation: 'c',
    });
    expect(both).toBeInstanceOf(OpenAiRefusal);
    expect((both as OpenAiRefusal).toBody().error.param).toBe('previous_response_id');
  });

  it('json_schema text format is the output schema; a bad item, a bad id or a non-user image are refused with their param', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(
      parseResponseRequest({
        model: 'm',
        input: 'x',
        text: { format: { type: 'json_schema', name: 'n', schema } },
      }),
    ).toMatchObject({ submission: { output_schema: schema } });
    const params = [
      { model: 'm', input: [{ type: 'item_reference', id: 'x' }] },
      { model: 'm', input: 'x', previous_response_id: 'chatcmpl-1' },
      {
        model: 'm',
        input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x' }] }],
      },
      { model: 'm', input: [{ role: 'tool', content: 'x' }] },
      { model: 'bad model!', input: 'x' },
    ].map((body) => (parseResponseRequest(body) as OpenAiRefusal).toBody().error.param);
    expect(params).toEqual([
      'input[0].type',
      'previous_response_id',
      'input[0].content[0].type',
      'input[0].role',
      'model',
    ]);
  });

  it('a response id reads back as its trace id only with the resp_ prefix', () => {
    expect(traceIdOfResponse(responseIdOf(traceId))).toBe(traceId);
    expect(traceIdOfResponse(traceId)).toBeUndefined();
  });
});
