/**
 * NATS ingress for upstream services: requests on `mesh.gateway.submit` (queue group `gateway`, so
 * each submission reaches one gateway instance) go through the same submission as `POST /v1/tasks`,
 * and the reply is a SubmitTaskReply or an ErrorBody. The caller is named by `x-account-id` /
 * `x-account-type` headers — NATS permissions decide who may publish here, so they are trusted — or
 * by an `authorization: Bearer <api key>` (or `x-api-key`) header.
 *
 * Bodies are read as HTTP bodies are (`json-body.ts`: nesting deeper than MAX_JSON_DEPTH is refused).
 *
 * Pre-assembled (seed 001) payloads are refused here: their vault is in clear, and no secret may
 * cross the bus in clear. Upstreams send those over HTTP, where the gateway seals the vault first.
 */
import { isPreAssembledSubmission, Subjects } from '@agentmesh/protocol';
import { encodeJson } from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import { Match, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Authenticator } from './auth.js';
import { Forbidden, InternalFailure, InvalidRequest, PayloadTooLarge, Rejection } from './errors.js';
import { parseJsonBody } from './json-body.js';
import type { AcceptedTask, TaskSubmitter } from './task-submission.js';

export const GATEWAY_QUEUE_GROUP = 'gateway';

export interface NatsIngressOptions {
  nc: NatsConnection;
  submitter: TaskSubmitter;
  authenticator: Authenticator;
  bodyLimitBytes: number;
  log: Logger;
}

export interface NatsIngress {
  /** Stops taking requests and waits for those in flight. */
  stop(): Promise<void>;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export function startNatsIngress(options: NatsIngressOptions): NatsIngress {
  const inFlight = new Set<Promise<void>>();
  const subscription: Subscription = options.nc.subscribe(Subjects.GATEWAY_SUBMIT, {
    queue: GATEWAY_QUEUE_GROUP,
    callback: (error, msg) => {
      if (error) {
        options.log.error({ err: error }, 'submit subscription failed');
        return;
      }
      const handling = handle(options, msg).finally(() => inFlight.delete(handling));
      inFlight.add(handling);
    },
  });
  return {
    async stop() {
      await subscription.drain();
      await Promise.allSettled([...inFlight]);
    },
  };
}

async function handle(options: NatsIngressOptions, msg: Msg): Promise<void> {
  let outcome: AcceptedTask | Rejection;
  try {
    outcome = await submit(options, msg);
  } catch (error) {
    options.log.error({ err: error }, 'submission over NATS failed');
    outcome = new InternalFailure({ cause: error });
  }
  if (outcome instanceof Rejection) options.log.info({ code: outcome.code }, 'submission over NATS rejected');
  if (!msg.reply) return;
  try {
    msg.respond(encodeJson(outcome instanceof Rejection ? outcome.toBody() : outcome.reply));
  } catch (error) {
    options.log.warn({ err: error }, 'reply to a NATS submission failed');
  }
}

async function submit(options: NatsIngressOptions, msg: Msg): Promise<AcceptedTask | Rejection> {
  if (msg.data.length > options.bodyLimitBytes) return new PayloadTooLarge(options.bodyLimitBytes);
  const caller = await options.authenticator.authenticate(
    (name) => msg.headers?.get(name, Match.IgnoreCase) || undefined,
    { trustAccountHeaders: true },
  );
  if (caller instanceof Rejection) return caller;
  let text: string;
  try {
    text = decoder.decode(msg.data);
  } catch {
    return new InvalidRequest('the request body is not valid UTF-8');
  }
  const parsed = parseJsonBody(text);
  if (parsed instanceof Rejection) return parsed;
  const body = parsed.value;
  if (isPreAssembledSubmission(body)) {
    return new Forbidden(
      'pre-assembled payloads carry a clear vault and are accepted over HTTP only (POST /v1/tasks), never on the bus',
    );
  }
  return options.submitter.submit(body, caller);
}
