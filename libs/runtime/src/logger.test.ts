import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { addSecretFilter } from './secret-filter.js';

function capture(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it('writes JSON lines that carry the service name and a string level', () => {
    const { lines, stream } = capture();
    createLogger({ service: 'gateway', destination: stream }).info({ trace_id: 'abc' }, 'hello');
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ service: 'gateway', level: 'info', trace_id: 'abc', msg: 'hello' });
  });

  it('when an object with secrets is logged whole, no canary secret reaches the line', () => {
    const canary = 'canary-5f1e0c7a9b';
    const { lines, stream } = capture();
    const log = createLogger({ service: 'executor', destination: stream });
    log.info(
      {
        task: { runtime_config: { vault: { QCC_KEY: canary }, model: { api_key: canary } } },
        vault: { QCC_KEY: canary },
        request: { headers: { authorization: `Bearer ${canary}`, token: canary, 'x-api-key': canary } },
        oauth: { client_secret: canary, access_token: canary },
      },
      'logged whole',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(canary);
    expect(lines[0]).toContain('[redacted]');
  });

  it('when a secret filter is added, every line passes through it, message and error stack included; once removed, lines are written as they are', () => {
    const value = 'canary-value-3c9d1e';
    const { lines, stream } = capture();
    const log = createLogger({ service: 'executor', destination: stream }).child({ component: 'child' });
    const remove = addSecretFilter((text) => text.split(value).join('[gone]'));
    log.error({ err: new Error(`upstream echoed ${value}`), note: value }, `message with ${value}`);
    remove();
    log.info(`after removal ${value}`);

    expect(lines).toHaveLength(2);
    expect(lines[0]).not.toContain(value);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      msg: 'message with [gone]',
      note: '[gone]',
      err: { message: 'upstream echoed [gone]', stack: expect.stringContaining('upstream echoed [gone]') },
    });
    expect(lines[1]).toContain(value);
  });

  it('when the format is pretty, lines are readable text, secret-named fields are redacted and the secret filters still apply', () => {
    const canary = 'canary-pretty-7a41d2';
    const filtered = 'filtered-value-90be3f';
    const { lines, stream } = capture();
    const log = createLogger({ service: 'gateway', format: 'pretty', destination: stream, colorize: true });
    const remove = addSecretFilter((text) => text.split(filtered).join('[gone]'));
    try {
      log.info(
        { request: { headers: { authorization: `Bearer ${canary}` } }, api_key: canary },
        'request in',
      );
      log.error({ err: new Error(`upstream echoed ${filtered}`) }, `failed with ${filtered}`);
    } finally {
      remove();
    }

    const text = lines.join('');
    expect(text).toMatch(/INFO.*gateway: request in/);
    expect(text).toMatch(/ERROR.*gateway: failed with \[gone\]/);
    expect(text).toContain('\u001b['); // coloured
    expect(() => JSON.parse(lines[0]!) as unknown).toThrow();
    expect(text).not.toContain(canary);
    expect(text).not.toContain(filtered);
    expect(text).toContain('[redacted]');
    expect(text).toContain('upstream echoed [gone]');
  });

  it('when no format is asked for and lines go to a stream, they are JSON', () => {
    const { lines, stream } = capture();
    createLogger({ service: 'gateway', destination: stream }).info('plain');
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'plain' });
  });
});
