/**
 * A JetStream client whose first publish freezes the NATS server before it is sent (docker pause /
 * SIGSTOP), so that try reaches the server's socket but gets no answer: how a test shows a publisher
 * sending again across an outage. The caller thaws the server (`unpause`) when it has seen the retry.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsServerControls } from './nats-server-handle.js';

export interface FreezingPublisher {
  /** The real client with `publish` wrapped; every other method is the client's own. */
  readonly js: JetStreamClient;
  /** Publishes tried through `js` so far. */
  tries(): number;
}

export function freezingOnFirstPublish(
  js: JetStreamClient,
  server: Pick<NatsServerControls, 'pause'>,
): FreezingPublisher {
  let tries = 0;
  const freezing = Object.create(js, {
    publish: {
      value: async (...args: Parameters<JetStreamClient['publish']>) => {
        tries++;
        if (tries === 1) await server.pause();
        return js.publish(...args);
      },
    },
  }) as JetStreamClient;
  return { js: freezing, tries: () => tries };
}
