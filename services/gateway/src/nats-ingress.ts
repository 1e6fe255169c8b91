/**
 * NATS ingress for upstream services (queue group `gateway`, so each submission reaches one gateway
 * instance): requests go through the same submission as `POST /v1/tasks`, and the reply is a
 * SubmitTaskReply or an ErrorBody. Two subjects:
 * - `mesh.gateway.submit.<account>`: the account is the subject's, i.e. the NATS user's identity (a
 *   per-account upstream user may publish only to its own). An `x-account-id` header or an API key
 *   naming another account is FORBIDDEN.
 * - `mesh.gateway.submit`: for trusted service users only (NATS permissions decide who may publish
 *   here): the caller names its account in `x-account-id` / `x-account-type`.
 * On either, an `authorization: Bearer <api key>` (or `x-api-key`) header acts for the key's account.
 *
 * Sub-tasks: an executor whose task calls an agent tool submits the sub-task on the trusted subject with
 * its link to the calling task in the `agentmesh-task-parent` header (TaskParent, JSON) and its call's
 * trace context (`traceparent`). Only the trusted subject reads that header; on an account subject it is
 * refused (a tenant could otherwise graft its task into another task's tree and trace).
 *
 * Bodies are read as HTTP bodies are (`json-body.ts`: nesting deeper than MAX_JSON_DEPTH is refused).
 *
 * Pre-assembled (seed 001) payloads are refused here: their vault is in clear, and no secret may
 * cross the bus in clear. Upstreams send those over HTTP, where the gateway seals the vault first.
 */
import {
  isPreAssembledSubmission,
  parseSubmitSubject,
  Subjects,
  TASK_PARENT_HEADER,
  TaskParent,
  Wildcards,
} from '@agentmesh/protocol';
import { encodeJson } from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import { Match, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Authenticator, Caller } from './auth.js';
import { Forbidden, InternalFailure, InvalidRequest, PayloadTooLarge, Rejection } from './errors.js';
import { parseJsonBody } from './json-body.js';
import type { AcceptedTask, SubmissionLink, TaskSubmitter } from './task-submission.js';

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
  const subscriptions: Subscription[] = [Subjects.GATEWAY_SUBMIT, Wildcards.ALL_ACCOUNT_SUBMITS].map(
    (subject) =>
      options.nc.subscribe(subject, {
        queue: GATEWAY_QUEUE_GROUP,
        callback: (error, msg) => {
          if (error) {
            options.log.error({ err: error, subject }, 'submit subscription failed');
            return;
          }
          const handling = handle(options, msg).finally(() => inFlight.delete(handling));
          inFlight.add(handling);
        },
      }),
  );
  return {
    async stop() {
      await Promise.all(subscriptions.map((subscription) => subscription.drain()));
      await Promise.allSettled([...inFlight]);
    },
  };
}

async function handle(options: NatsIngressOptions, msg: Msg): Promise<void> {
  if (msg.reply && !isInboxSubject(msg.reply)) {
    // The server does not check a reply subject against the requester's publish permissions, and the
    // gateway may publish on subjects streams store (`$KV.mesh_agents.…`, task subjects): answering
    // there would let any upstream overwrite another account's records with a submit reply. Every
    // real requester's reply subject is under its inbox prefix.
    options.log.warn(
      { subject: msg.subject },
      'submission over NATS ignored: its reply subject is not an inbox',
    );
    return;
  }
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
  const caller = await identify(options.authenticator, msg);
  if (caller instanceof Rejection) return caller;
  const link = subtaskLink(msg);
  if (link instanceof Rejection) return link;
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
  return options.submitter.submit(body, caller, link);
}

/** A sub-task's link to its calling task, read on the trusted subject only (see the header comment). */
function subtaskLink(msg: Msg): SubmissionLink | undefined | Rejection {
  const raw = msg.headers?.get(TASK_PARENT_HEADER, Match.IgnoreCase) || undefined;
  if (raw === undefined) return undefined;
  if (parseSubmitSubject(msg.subject)) {
    return new Forbidden(`${TASK_PARENT_HEADER} is accepted on the trusted submit subject only`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return new InvalidRequest(`${TASK_PARENT_HEADER} is not JSON`);
  }
  const parent = TaskParent.safeParse(value);
  if (!parent.success) return InvalidRequest.fromZod(parent.error, TASK_PARENT_HEADER);
  return { parent: parent.data, ...(msg.headers === undefined ? {} : { traceHeaders: msg.headers }) };
}

/**
 * Who submits: on an account subject, the subject's account (headers and keys may only agree with it);
 * on the trusted subject, whoever the headers or the key name.
 */
async function identify(authenticator: Authenticator, msg: Msg): Promise<Caller | Rejection> {
  const header = (name: string): string | undefined => msg.headers?.get(name, Match.IgnoreCase) || undefined;
  const confined = parseSubmitSubject(msg.subject);
  if (!confined) return authenticator.authenticate(header, { trustAccountHeaders: true });
  const claimed = header('x-account-id');
  if (claimed !== undefined && claimed !== confined.accountId) {
    return new Forbidden(`x-account-id names another account than the subject ${msg.subject}`);
  }
  const caller = await authenticator.authenticate(header, { trustAccountHeaders: true });
  if (caller instanceof Rejection) return caller;
  if (caller.accountId !== undefined && caller.accountId !== confined.accountId) {
    return new Forbidden(`the API key belongs to another account than the subject ${msg.subject}`);
  }
  return { ...caller, accountId: confined.accountId };
}

/** An inbox: `_INBOX.…` or a per-user prefix such as `_INBOX_upstream_acme.…` (infra/nats/accounts.conf). */
function isInboxSubject(subject: string): boolean {
  return subject.startsWith('_INBOX.') || subject.startsWith('_INBOX_');
}
