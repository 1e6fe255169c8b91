import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ERROR_CODE_INFO,
  ErrorBody,
  ErrorCode,
  describeZodError,
  formatIssuePath,
  httpStatusOf,
  isRetryableByDefault,
  zodErrorBody,
} from './errors.js';

describe('error codes', () => {
  it('every code has an HTTP status and a default retryable flag', () => {
    for (const code of Object.values(ErrorCode)) {
      expect(ERROR_CODE_INFO[code].httpStatus, code).toBeGreaterThanOrEqual(400);
      expect(typeof ERROR_CODE_INFO[code].retryable, code).toBe('boolean');
    }
  });

  it('maps the codes seed 004 fixes to its statuses', () => {
    expect(httpStatusOf('SERVICE_UNAVAILABLE')).toBe(502);
    expect(httpStatusOf('UNSUPPORTED_ACTION_TYPE')).toBe(400);
    expect(httpStatusOf('INVALID_REQUEST')).toBe(400);
    expect(httpStatusOf('SCHEMA_CONVERSION_ERROR')).toBe(500);
  });

  it('says an unavailable model may be retried but an invalid request may not', () => {
    expect(isRetryableByDefault('LLM_UNAVAILABLE')).toBe(true);
    expect(isRetryableByDefault('INVALID_REQUEST')).toBe(false);
    expect(isRetryableByDefault('DEADLINE_EXCEEDED')).toBe(false);
  });

  it('the error body accepts known codes only', () => {
    expect(ErrorBody.safeParse({ code: 'NOT_FOUND', message: 'no such task' }).success).toBe(true);
    expect(ErrorBody.safeParse({ code: 'TEAPOT', message: 'short and stout' }).success).toBe(false);
  });
});

describe('formatIssuePath', () => {
  it('writes keys with dots and indices in brackets', () => {
    expect(formatIssuePath(['a', 'b', 0, 'c'])).toBe('a.b[0].c');
    expect(formatIssuePath([])).toBe('');
    expect(formatIssuePath([2, 'x'])).toBe('[2].x');
  });

  it('keeps header-like keys readable and quotes keys that would be ambiguous', () => {
    expect(formatIssuePath(['fixed_params', 'header', 'x-account-id'])).toBe(
      'fixed_params.header.x-account-id',
    );
    expect(formatIssuePath(['vault', 'a.b'])).toBe('vault["a.b"]');
    expect(formatIssuePath(['vault', ''])).toBe('vault[""]');
  });
});

describe('describeZodError', () => {
  const Schema = z.object({
    a: z.object({ b: z.array(z.object({ c: z.number() })) }),
    mode: z.enum(['x', 'y']),
  });

  it('names every offending path in the message and in detail.issues', () => {
    const result = Schema.safeParse({ a: { b: [{ c: 1 }, { c: 'two' }] }, mode: 'z' });
    if (result.success) throw new Error('expected a rejection');
    const described = describeZodError(result.error);
    expect(described.detail.issues.map((issue) => issue.path)).toEqual(['a.b[1].c', 'mode']);
    expect(described.message).toMatch(/^a\.b\[1\]\.c: .+; mode: .+/);
  });

  it('reports an unknown field of a strict object at the field itself', () => {
    const result = z.strictObject({ model: z.strictObject({ name: z.string() }) }).safeParse({
      model: { name: 'm', api_key: 'sk-x' },
    });
    if (result.success) throw new Error('expected a rejection');
    expect(describeZodError(result.error).detail.issues).toEqual([
      { path: 'model.api_key', message: 'unknown field' },
    ]);
  });

  it('reports a union failure through the branch that got furthest', () => {
    const Union = z.union([z.object({ kind: z.literal('a'), size: z.number() }), z.string()]);
    const result = z.object({ item: Union }).safeParse({ item: { kind: 'a', size: 'big' } });
    if (result.success) throw new Error('expected a rejection');
    expect(describeZodError(result.error).detail.issues.map((issue) => issue.path)).toEqual(['item.size']);
  });

  it('zodErrorBody is a valid INVALID_REQUEST error body', () => {
    const result = Schema.safeParse({});
    if (result.success) throw new Error('expected a rejection');
    const body = zodErrorBody(result.error);
    expect(ErrorBody.parse(body)).toEqual(body);
    expect(body.code).toBe('INVALID_REQUEST');
  });
});
