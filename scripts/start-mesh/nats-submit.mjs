#!/usr/bin/env node
// The NATS door of npm start's demo, with nothing but this clone (no `nats` CLI): as the account's
// tenant user it subscribes to the events subject of a trace_id it picks, then as the account's
// upstream user it submits the task with that trace_id on the account's ingress subject, and prints
// every event as one JSON line until the terminal one (exit 0 on `done`, 1 on `error` or a refusal).
// Subscribing first is what a tenant must do: its NATS user has no JetStream API to replay from, and the
// demo task ends a few milliseconds after the submit's reply. Subjects come from @agentmesh/protocol.
// Passwords only from the environment (AGENTMESH_NATS_TENANT_PASSWORD, AGENTMESH_NATS_UPSTREAM_PASSWORD),
// never from arguments other users could read in the process list.
import { clearTimeout, setTimeout } from 'node:timers';
import { parseArgs } from 'node:util';
import { accountSubmitSubject, newTraceId, taskEventsSubject } from '@agentmesh/protocol';
import { connect } from '@nats-io/transport-node';

const usage =
  'usage: AGENTMESH_NATS_TENANT_PASSWORD=… AGENTMESH_NATS_UPSTREAM_PASSWORD=… node nats-submit.mjs ' +
  '--nats <url> --account <id> --workflow <id> --message <text> [--user <id>] [--timeout-ms <n>]';

function fail(message, status = 2) {
  process.stderr.write(`${message}\n`);
  process.exit(status);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      nats: { type: 'string' },
      account: { type: 'string' },
      workflow: { type: 'string' },
      message: { type: 'string' },
      user: { type: 'string', default: 'demo-user' },
      'timeout-ms': { type: 'string', default: '60000' },
    },
  }));
} catch (error) {
  fail(`${error.message}\n${usage}`);
}
for (const required of ['nats', 'account', 'workflow', 'message']) {
  if (!values[required]) fail(`--${required} is required\n${usage}`);
}
const tenantPassword = process.env.AGENTMESH_NATS_TENANT_PASSWORD;
const upstreamPassword = process.env.AGENTMESH_NATS_UPSTREAM_PASSWORD;
if (!tenantPassword || !upstreamPassword) {
  fail(`AGENTMESH_NATS_TENANT_PASSWORD and AGENTMESH_NATS_UPSTREAM_PASSWORD must be set\n${usage}`);
}

const account = values.account;
const traceId = newTraceId();
const tenant = await connect({
  servers: values.nats,
  user: `tenant-${account}`,
  pass: tenantPassword,
  maxReconnectAttempts: 0,
});
// infra/nats/accounts.conf lets an upstream receive replies only under its own inbox prefix.
const upstream = await connect({
  servers: values.nats,
  user: `upstream-${account}`,
  pass: upstreamPassword,
  inboxPrefix: `_INBOX_upstream_${account}`,
  maxReconnectAttempts: 0,
});
let status = 1;
let ended = false;
try {
  const events = tenant.subscribe(taskEventsSubject(account, traceId));
  await tenant.flush();
  const request = {
    trace_id: traceId,
    workflow_id: values.workflow,
    user_id: values.user,
    messages: [{ role: 'user', content: values.message }],
  };
  const reply = (
    await upstream.request(accountSubmitSubject(account), JSON.stringify(request), { timeout: 10_000 })
  ).json();
  process.stderr.write(`submitted: ${JSON.stringify(reply)}\n`);
  if (reply.trace_id !== traceId) throw new Error('the submission was refused');
  const timer = setTimeout(() => events.unsubscribe(), Number(values['timeout-ms']));
  for await (const message of events) {
    const event = message.json();
    process.stdout.write(`${JSON.stringify(event)}\n`);
    if (event.type === 'done' || event.type === 'error') {
      status = event.type === 'done' ? 0 : 1;
      ended = true;
      break;
    }
  }
  clearTimeout(timer);
  if (!ended) process.stderr.write(`no terminal event within ${values['timeout-ms']} ms\n`);
} catch (error) {
  process.stderr.write(`error: ${error.message}\n`);
  status = 1;
} finally {
  await Promise.allSettled([tenant.close(), upstream.close()]);
}
process.exit(status);
