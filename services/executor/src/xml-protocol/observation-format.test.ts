import { describe, expect, it } from 'vitest';
import {
  actionFormatObservation,
  failureObservation,
  observedFailure,
  readToolMessage,
  successObservation,
} from './observation-format.js';

describe('OBSERVATION texts (seed 003 §3.4)', () => {
  it('when a tool succeeds, the text is the seed example verbatim', () => {
    expect(
      successObservation(
        'core:execute-python-script',
        JSON.stringify({ processed_items: 10, report_url: '/reports/analyzer_123.html' }),
      ),
    ).toBe(
      'Tool core:execute-python-script executed successfully. Output: {"processed_items":10,"report_url":"/reports/analyzer_123.html"}',
    );
  });

  it('when a tool fails, the text follows the seed examples, with or without details', () => {
    expect(
      failureObservation('core:execute-python-script', {
        type: 'ScriptError',
        message: 'Division by zero in script',
        details: 'Traceback (most recent call last)...',
      }),
    ).toBe(
      'Tool core:execute-python-script failed. Error type: ScriptError. Message: Division by zero in script. Details: Traceback (most recent call last)...',
    );
    expect(
      failureObservation('core:execute-python-script', {
        type: 'ParameterValidationError',
        message: "Input parameter 'timeoutMs' must be an integer.",
      }),
    ).toBe(
      "Tool core:execute-python-script failed. Error type: ParameterValidationError. Message: Input parameter 'timeoutMs' must be an integer.",
    );
  });

  it("when a script tool's error carries a seed 003 type and details, those are its type and details", () => {
    expect(
      observedFailure({
        code: 'TOOL_ERROR',
        message: 'the script exited with code 1',
        detail: { type: 'ScriptError', details: 'ZeroDivisionError', exit: { exitCode: 1 } },
      }),
    ).toEqual({
      type: 'ScriptError',
      message: 'the script exited with code 1',
      details: 'ZeroDivisionError; {"exit":{"exitCode":1}}',
    });
    expect(
      observedFailure({ code: 'NOT_FOUND', message: 'no such tool' }, ['the tool ids are: a, b']),
    ).toEqual({
      type: 'NOT_FOUND',
      message: 'no such tool',
      details: 'the tool ids are: a, b',
    });
  });

  it('when an ACTION could not be read, the observation says what was wrong and that nothing ran', () => {
    expect(actionFormatObservation('search', 'input #1 has no name attribute', 1)).toBe(
      'Tool search failed. Error type: ActionFormatError. Message: input #1 has no name attribute. Details: The ACTION was not run; write it again in the format the system prompt describes.',
    );
    expect(actionFormatObservation(undefined, 'the ACTION has no <tool_id>', 2)).toBe(
      'An ACTION failed. Error type: ActionFormatError. Message: the ACTION has no <tool_id>. Details: None of the 2 ACTION blocks in your reply was run; write them again in the format the system prompt describes.',
    );
  });

  it("when a tool message is the loop's error shape it reads as a failure; any other content is output", () => {
    expect(readToolMessage('{"error":{"code":"NOT_FOUND","message":"gone"}}')).toEqual({
      ok: false,
      error: { code: 'NOT_FOUND', message: 'gone' },
    });
    expect(
      readToolMessage('{"error":{"code":"INVALID_REQUEST","message":"bad","detail":{"issues":[]}}}'),
    ).toEqual({
      ok: false,
      error: { code: 'INVALID_REQUEST', message: 'bad', detail: { issues: [] } },
    });
    for (const output of [
      '{"error":"a result that mentions an error"}',
      '{"error":{"code":"E42","message":"an API error body, not a tool error"}}',
      '{"error":{"code":"NOT_FOUND","message":"m"},"status":404}',
      'plain text',
      '{"error":',
    ]) {
      expect(readToolMessage(output)).toEqual({ ok: true, output });
    }
  });
});
