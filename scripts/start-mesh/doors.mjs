// What npm start prints once the mesh is up: the keys, then one ready line per way in (curl + SSE, the
// CLI, the console, OpenAI clients, MCP clients, NATS) and each service's metrics URL. Every command
// line works pasted verbatim into a POSIX shell, from any directory: programs by absolute path (this
// Node.js and the clone's built CLI, never a package name a registry would resolve), keys and URLs
// filled in, no variable to export first. tests/mesh/src/start-mesh-doors.int.test.ts pastes each one.
import { join } from 'node:path';
import { accountSubmitSubject, newTraceId, taskEventsSubject } from '@agentmesh/protocol';
import { say } from './output.mjs';

const MESSAGE = 'Tell me about ByteDance';
const WORKFLOW = 'demo_agent';
const USER = 'demo-user';

const line = (text) => process.stdout.write(`  ${text}\n`);
/** One word for a POSIX shell: as it is when nothing in it is special, else single-quoted. */
const quote = (text) =>
  /^[\w/.:=@%+,-]+$/.test(String(text)) ? String(text) : `'${String(text).replaceAll("'", `'\\''`)}'`;

/** The command that runs the clone's `agentmesh` CLI, by absolute paths only. */
export function cliCommand(root) {
  return `${quote(process.execPath)} ${quote(join(root, 'libs', 'client', 'dist', 'cli', 'main.js'))}`;
}

function printHttpDoors({ root, gatewayUrl, accountKey }) {
  const bearer = `-H ${quote(`authorization: Bearer ${accountKey}`)}`;
  const body = JSON.stringify({
    workflow_id: WORKFLOW,
    user_id: USER,
    messages: [{ role: 'user', content: MESSAGE }],
  });
  say('curl: submit a task, then follow its events (Server-Sent Events) to `done`:');
  line(
    `curl -s ${gatewayUrl}/v1/tasks ${bearer} -H 'content-type: application/json' -d ${quote(body)} ` +
      `| sed -n 's/.*"trace_id":"\\([^"]*\\)".*/\\1/p' ` +
      `| xargs -I{} curl -sN ${gatewayUrl}/v1/tasks/{}/events ${bearer}`,
  );
  const cli = cliCommand(root);
  say(
    `the agentmesh CLI (this clone's build, by absolute path: \`npx agentmesh\` outside the clone would ` +
      `fetch someone else's package; \`alias agentmesh=${quote(cli)}\` saves typing):`,
  );
  line(
    `AGENTMESH_URL=${gatewayUrl} AGENTMESH_API_KEY=${quote(accountKey)} ${cli} submit --workflow ${WORKFLOW} ` +
      `--user ${USER} --message ${quote(MESSAGE)} --follow`,
  );
  say(
    `the web console: open ${gatewayUrl}/console, paste the account API key into "API key", pick ` +
      `${WORKFLOW} and send a message`,
  );
  say(
    `an OpenAI client: base_url ${gatewayUrl}/v1, api_key the account API key, model ${WORKFLOW}; the ` +
      'official SDKs read these variables:',
  );
  line(`export OPENAI_BASE_URL=${gatewayUrl}/v1 OPENAI_API_KEY=${quote(accountKey)}`);
  say(
    `an MCP client (Streamable HTTP): url ${gatewayUrl}/mcp, header \`Authorization: Bearer <account API ` +
      `key>\`, tool run_${WORKFLOW}; as a client config:`,
  );
  line(
    JSON.stringify({
      mcpServers: {
        agentmesh: {
          type: 'http',
          url: `${gatewayUrl}/mcp`,
          headers: { Authorization: `Bearer ${accountKey}` },
        },
      },
    }),
  );
}

function printNatsDoors({ root, nats, account }) {
  const tenant = `tenant-${account}`;
  const upstream = `upstream-${account}`;
  say(
    `NATS, with this clone alone: submits as ${upstream} after subscribing as ${tenant} to the task's ` +
      'events subject, and prints every event to `done`:',
  );
  line(
    `AGENTMESH_NATS_TENANT_PASSWORD=${quote(nats.passwords[tenant])} ` +
      `AGENTMESH_NATS_UPSTREAM_PASSWORD=${quote(nats.passwords[upstream])} ` +
      `${quote(process.execPath)} ${quote(join(root, 'scripts', 'start-mesh', 'nats-submit.mjs'))} ` +
      `--nats ${nats.url} --account ${account} --workflow ${WORKFLOW} --user ${USER} --message ${quote(MESSAGE)}`,
  );
  // With core NATS only, the subscription must exist before the task does: the client picks the trace_id.
  const traceId = newTraceId();
  const submission = JSON.stringify({
    trace_id: traceId,
    workflow_id: WORKFLOW,
    user_id: USER,
    messages: [{ role: 'user', content: MESSAGE }],
  });
  say(
    'or with the nats CLI (not part of the clone: a release from https://github.com/nats-io/natscli/releases, ' +
      `or \`go install github.com/nats-io/natscli/nats@latest\`): subscribe first, as ${tenant}, to a ` +
      `trace_id you choose (a new one per task), then submit it from a second shell as ${upstream}:`,
  );
  line(
    `nats -s ${nats.url} --user ${tenant} --password '${nats.passwords[tenant]}' sub '${taskEventsSubject(account, traceId)}'`,
  );
  process.stdout.write(
    `  nats -s ${nats.url} --user ${upstream} --password '${nats.passwords[upstream]}' --inbox-prefix _INBOX_${upstream.replace('-', '_')} \\\n` +
      `    req ${accountSubmitSubject(account)} '${submission}'\n`,
  );
}

/** Prints how to use the running mesh; `accountKey` and `nats.passwords` are absent when not generated. */
export function printDoors({ root, gatewayUrl, adminKey, accountKey, account, nats, metrics, state }) {
  say(`gateway at ${gatewayUrl} (HTTP_PORT sets its port)`);
  const where = state.dir ? `kept in ${state.dir}` : 'for this run';
  if (adminKey)
    say(`admin key ${where} (management API; tasks of the account named in x-account-id): ${adminKey}`);
  if (accountKey) {
    say(`account API key of account \`${account}\` ${where} (tasks, console, OpenAI, MCP): ${accountKey}`);
    printHttpDoors({ root, gatewayUrl, accountKey });
    if (nats.passwords) printNatsDoors({ root, nats, account });
  } else {
    say(
      `no demo: register an agent (README.md) and create an account key with an admin key, e.g. ` +
        `AGENTMESH_URL=${gatewayUrl} AGENTMESH_API_KEY=<admin key> ${cliCommand(root)} --account ${account} keys create`,
    );
  }
  for (const [service, port] of Object.entries(metrics)) {
    say(`${service} metrics: http://127.0.0.1:${port}/metrics`);
  }
  say('press Ctrl-C to stop');
}
