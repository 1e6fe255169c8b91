/* global document, sessionStorage */
// The agentmesh web console: keeps the API key in sessionStorage (this tab only), lists the agents the
// key may run and its account's recent tasks, submits a message to an agent and follows the task live
// (task-view.js). Every request goes to this gateway's own origin.
import { TaskView } from './task-view.js';

const KEY_STORAGE = 'agentmesh.apiKey';
const $ = (id) => document.getElementById(id);

const notice = (text) => {
  $('notice').textContent = text;
};

const apiKey = () => sessionStorage.getItem(KEY_STORAGE) ?? '';

/** One API call with the key; answers the parsed JSON body or throws with the gateway's message. */
async function api(method, path, body) {
  const key = apiKey();
  if (!key) throw new Error('enter an API key first');
  const response = await fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw new Error(json?.message ?? `HTTP ${response.status}`);
  return json;
}

/** The task this page last submitted, as a row of the task list. */
let lastSent;

const view = new TaskView($('task'), {
  api,
  onNotice: notice,
  onOpenTask: (traceId) => openTask(traceId),
  onStatus: (traceId, status) => {
    if (lastSent?.trace_id === traceId) lastSent.status = status;
    const cell = document.querySelector(`#tasks tr[data-trace-id="${traceId}"] .status`);
    if (cell) cell.textContent = status;
    // The task just sent belongs in the list even when no list read has shown it yet (one still under
    // way, one that passed over it, or one that failed).
    else if (lastSent?.trace_id === traceId) $('tasks').prepend(taskRow(lastSent));
  },
});

async function loadAgents() {
  const select = $('agent');
  try {
    const { agents } = await api('GET', '/v1/agents');
    const chosen = select.value;
    select.replaceChildren(
      ...agents.map((agent) => {
        const option = document.createElement('option');
        option.value = agent.workflow_id;
        option.textContent = agent.name ? `${agent.name} (${agent.workflow_id})` : agent.workflow_id;
        if (agent.version) option.dataset.version = String(agent.version);
        return option;
      }),
    );
    if (agents.some((agent) => agent.workflow_id === chosen)) select.value = chosen;
    showCurrentVersion();
    if (agents.length === 0) notice('This account has no agents yet.');
  } catch (error) {
    notice(`Agents could not be loaded: ${error.message}`);
  }
}

/** Numbers list reads: an answer to an older read that arrives after a newer one is dropped. */
let tasksRead = 0;

async function loadTasks() {
  const read = ++tasksRead;
  try {
    const { tasks } = await api('GET', '/v1/tasks?limit=20');
    if (read !== tasksRead) return;
    $('tasks').replaceChildren(...tasks.map(taskRow));
    // A task whose status is rewritten while the list is read can be missing from it (the bucket keeps
    // one revision per key, so the listing may pass over it): the task just sent is shown all the same.
    if (lastSent && !tasks.some((task) => task.trace_id === lastSent.trace_id)) {
      $('tasks').prepend(taskRow(lastSent));
    }
    // The list may have been read before the task on view reached the status it shows.
    if (view.traceId && view.finished) {
      const cell = document.querySelector(`#tasks tr[data-trace-id="${view.traceId}"] .status`);
      if (cell) cell.textContent = view.status;
    }
  } catch (error) {
    notice(`Tasks could not be loaded: ${error.message}`);
  }
}

function taskRow(task) {
  const row = document.createElement('tr');
  row.dataset.traceId = task.trace_id;
  const open = document.createElement('button');
  open.type = 'button';
  open.textContent = task.trace_id.slice(0, 12);
  open.setAttribute('aria-label', `Open task ${task.trace_id}`);
  open.addEventListener('click', () => openTask(task.trace_id));
  const agent = task.agent_version ? `${task.workflow_id}@${task.agent_version}` : task.workflow_id;
  const cells = [open, agent, task.status, new Date(task.updated_at).toLocaleTimeString()];
  cells.forEach((content, index) => {
    const cell = document.createElement('td');
    cell.append(content);
    if (index === 2) cell.className = 'status';
    row.append(cell);
  });
  return row;
}

const freshToken = (traceId) => async () =>
  (await api('POST', `/v1/tasks/${encodeURIComponent(traceId)}/stream-token`)).stream_token;

/** Replays an earlier task's events (and follows it if it still runs). */
function openTask(traceId) {
  view.follow(traceId, freshToken(traceId));
  $('task-heading').focus();
}

/** The chosen agent's current version, beside the box where another may be typed. */
function showCurrentVersion() {
  const version = $('agent').selectedOptions[0]?.dataset.version;
  $('agent-version').placeholder = version ? `current: ${version}` : 'current';
}

/** The chosen agent, pinned to the version typed (`workflow_id@version`), else its current one. */
function chosenAgent() {
  const version = $('agent-version').value.trim();
  return version ? `${$('agent').value}@${version}` : $('agent').value;
}

async function send(event) {
  event.preventDefault();
  const message = $('message').value.trim();
  if (!message) return;
  $('send').disabled = true;
  try {
    const reply = await api('POST', '/v1/tasks', {
      workflow_id: chosenAgent(),
      user_id: 'console',
      messages: [{ role: 'user', content: message }],
    });
    notice(`Task ${reply.trace_id} submitted.`);
    lastSent = {
      trace_id: reply.trace_id,
      workflow_id: chosenAgent(),
      status: 'queued',
      updated_at: new Date().toISOString(),
    };
    // The reply's token first; later reconnects ask for a new one.
    let first = reply.stream_token;
    const renew = freshToken(reply.trace_id);
    view.follow(reply.trace_id, async () => {
      const token = first;
      first = undefined;
      return token ?? renew();
    });
    void loadTasks();
  } catch (error) {
    notice(`The task was not accepted: ${error.message}`);
  } finally {
    $('send').disabled = false;
  }
}

function useKey(event) {
  event.preventDefault();
  const key = $('api-key').value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_STORAGE, key);
  $('api-key').value = '';
  $('api-key').placeholder = 'key set for this tab';
  notice('API key set for this tab.');
  void loadAgents();
  void loadTasks();
}

function forgetKey() {
  sessionStorage.removeItem(KEY_STORAGE);
  lastSent = undefined;
  view.close();
  $('api-key').placeholder = '';
  $('agent').replaceChildren();
  $('tasks').replaceChildren();
  notice('API key forgotten.');
}

$('key-form').addEventListener('submit', useKey);
$('forget-key').addEventListener('click', forgetKey);
$('run-form').addEventListener('submit', send);
$('message').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('run-form').requestSubmit();
});
$('reload-agents').addEventListener('click', () => void loadAgents());
$('agent').addEventListener('change', showCurrentVersion);
$('reload-tasks').addEventListener('click', () => void loadTasks());
$('task-heading').tabIndex = -1;

if (apiKey()) {
  $('api-key').placeholder = 'key set for this tab';
  void loadAgents();
  void loadTasks();
}
