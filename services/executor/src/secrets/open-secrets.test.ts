import { Writable } from 'node:stream';
import { addSecretFilter, createLogger } from '@agentmesh/runtime';
import { describe, expect, it } from 'vitest';
import { OpenSecrets } from './open-secrets.js';
import { SecretScrubber } from './secret-scrubber.js';

const KEY = 'canary-open-key/77e1+';

function capturedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, log: createLogger({ service: 'executor', destination }) };
}

describe('OpenSecrets as the log filter', () => {
  it('while a task holds its secrets, no log line carries them (message, fields, error stack, escaped or encoded); after release, lines pass untouched', () => {
    const open = new OpenSecrets();
    const remove = addSecretFilter((text) => open.scrub(text));
    try {
      const { lines, log } = capturedLogger();
      const task = new SecretScrubber();
      const release = open.hold(task);
      task.add(KEY); // values learnt after holding count at once
      const error = new Error(`upstream said: bad key ${KEY}`);
      log.error(
        { err: error, echoed: encodeURIComponent(KEY), b64: Buffer.from(KEY).toString('base64') },
        `key ${KEY.toUpperCase()}`,
      );
      release();
      log.info(`after the task: ${KEY}`);

      expect(lines).toHaveLength(2);
      const [during, after] = lines as [string, string];
      expect(JSON.parse(during)).toMatchObject({
        msg: 'key [REDACTED]',
        echoed: '[REDACTED]',
        b64: '[REDACTED]',
      });
      expect(during).toContain('"stack":"Error: upstream said: bad key [REDACTED]');
      for (const form of [
        KEY,
        JSON.stringify(KEY).slice(1, -1).replace(/\//g, '\\/'),
        encodeURIComponent(KEY),
      ]) {
        expect(during).not.toContain(form);
      }
      expect(after).toContain(KEY);
    } finally {
      remove();
    }
  });

  it('when two tasks hold secrets, both sets are scrubbed, and each only until its own release', () => {
    const open = new OpenSecrets();
    const first = open.hold(new SecretScrubber(['first-task-secret']));
    const second = open.hold(new SecretScrubber(['second-task-secret']));

    expect(open.scrub('first-task-secret second-task-secret')).toBe('[REDACTED] [REDACTED]');
    first();
    expect(open.scrub('first-task-secret second-task-secret')).toBe('first-task-secret [REDACTED]');
    second();
    expect(open.scrub('second-task-secret')).toBe('second-task-secret');
  });

  it('when tasks holding the same values start and end while others run, the combined matcher is kept; a new value rebuilds it', () => {
    const open = new OpenSecrets();
    const releases = [0, 1, 2].map(() => open.hold(new SecretScrubber(['shared-account-key'])));
    expect(open.scrub('shared-account-key')).toBe('[REDACTED]');
    const combined = open.current();
    const matcher = combined.matcher;
    releases[0]?.();
    const another = open.hold(new SecretScrubber(['shared-account-key']));
    expect(open.scrub('shared-account-key')).toBe('[REDACTED]');
    expect(open.current()).toBe(combined);
    expect(open.current().matcher).toBe(matcher);

    const other = open.hold(new SecretScrubber(['another-account-key']));
    expect(open.scrub('shared-account-key another-account-key')).toBe('[REDACTED] [REDACTED]');
    expect(open.current().matcher).not.toBe(matcher);
    other();
    another();
  });
});
