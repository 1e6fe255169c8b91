/* global document, FormData, localStorage, Option, sessionStorage */
// The agentmesh web console: keeps the API key in sessionStorage (this tab only), lists the agents the
// key may run and its account's recent tasks, submits a message to an agent and follows the task live
// (task-view.js). Every request goes to this gateway's own origin.
//
// Either kind of key works. An account's API key acts for its account. An admin key acts for the account
// named in x-account-id: the console asks what the key is (GET /v1/caller), offers the accounts an admin
// may act for (GET /v1/admin/accounts) and sends the chosen one with every call. Tasks are submitted as
// the user named on the page (remembered in localStorage; `console` by default), whose own credentials
// come first and the account's after.
import { CredentialsView, mayManageCredentials } from './credentials-view.js';
import { SchedulesView } from './schedules-view.js';
import { taskListQuery, taskRowCells } from './task-list.js';
import { TaskView } from './task-view.js';
import { mayManageAgents, VersionsView } from './versions-view.js';
import { ThreadsView } from './threads-view.js';

const KEY_STORAGE = 'agentmesh.apiKey';
const ACCOUNT_STORAGE = 'agentmesh.accountId';
const USER_STORAGE = 'agentmesh.userId';
/** The user the console submits as unless told otherwise: an account-wide credential serves it. */
const DEFAULT_USER = 'console';
const $ = (id) => document.getElementById(id);

const notice = (text) => {
  $('notice').textContent = text;
};

const apiKey = () => sessionStorage.getItem(KEY_STORAGE) ?? '';
const chosenAccount = () => sessionStorage.getItem(ACCOUNT_STORAGE) ?? '';
/** What the key in use is (`admin`, `api_key`, `trusted`), once the gateway said so. */
let keyKind;

/**
 * One API call with the key (and, for an admin key, the chosen account, unless `forAccount` is false);
 * answers the parsed JSON body or throws with the gateway's message.
 */
async function api(method, path, body, { forAccount = true } = {}) {
  const key = apiKey();
  if (!key) throw new Error('enter an API key first');
  const account = forAccount && keyKind === 'admin' ? chosenAccount() : '';
  if (forAccount && keyKind === 'admin' && !account) throw new Error('name the account to act for first');
  const response = await fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(account ? { 'x-account-id': account } : {}),
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
    if (chatTurn?.traceId === traceId && ['done', 'error', 'cancelled'].includes(status)) {
      const { threadId } = chatTurn;
      chatTurn = undefined;
      void threads.turnEnded(threadId);
    }
    const cell = document.querySelector(`#tasks tr[data-trace-id="${traceId}"] .status`);
    if (cell) cell.textContent = status;
    // The task just sent belongs in the list even when no list read has shown it yet (one still under
    // way, one that passed over it, or one that failed).
    else if (lastSent?.trace_id === traceId) $('tasks').prepend(taskRow(lastSent));
  },
});

/** The chat turn the task panel follows: its task and thread (the transcript is read again when it ends). */
let chatTurn;

// The chat on threads (threads-view.js): a turn is a task submitted with `thread_id`, followed above.
const threads = new ThreadsView($('chat'), {
  api,
  onNotice: notice,
  send: async (message, threadId) => {
    const traceId = await submitTask(message, threadId);
    chatTurn = { traceId, threadId };
  },
});

// The account's schedules (schedules-view.js): pause, resume, run now; a run-now's task opens above.
const schedules = new SchedulesView($('schedules'), {
  api,
  onNotice: notice,
  onOpenTask: (traceId) => openTask(traceId),
  detail: $('schedule-detail'),
});

/** The account the key acts for: the one an admin key names, or an account key's own. */
let actingAccount = '';

// The credentials of the account acted for and of the user submitted as (credentials-view.js): names
// listed, values written only; management calls, so admin keys only.
const credentials = new CredentialsView($('credentials'), {
  api,
  account: () => actingAccount,
  user: () => userId(),
  canManage: () => mayManageCredentials(keyKind),
  onNotice: notice,
});
// The chosen agent's versions (versions-view.js): list, diff, roll back; management calls, so admin keys only.
new VersionsView($('versions'), {
  api,
  agentSelect: $('agent'),
  canManage: () => mayManageAgents(keyKind),
  onNotice: notice,
  onChanged: () => void loadAgents(),
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
    const filter = $('search-agent');
    const filtered = filter.value;
    filter.replaceChildren(
      new Option('any', ''),
      ...agents.map((agent) => new Option(agent.workflow_id, agent.workflow_id)),
    );
    if (agents.some((agent) => agent.workflow_id === filtered)) filter.value = filtered;
    showCurrentVersion();
    if (agents.length === 0) notice('This account has no agents yet.');
  } catch (error) {
    notice(`Agents could not be loaded: ${error.message}`);
  }
}

/** Numbers list reads: an answer to an older read that arrives after a newer one is dropped. */
let tasksRead = 0;

/** The rows shown by the last list read, by trace id: what opening one knows of it (its submit time). */
const listed = new Map();

async function loadTasks() {
  const read = ++tasksRead;
  let query;
  try {
    query = taskListQuery(new FormData($('task-search')));
  } catch (error) {
    notice(error.message);
    // Older reads in flight are dropped: none will be drawn.
    $('tasks').removeAttribute('aria-busy');
    return;
  }
  const filtered = query.toString() !== 'limit=20';
  // Busy until the newest read is drawn (assistive technology waits; so can a test).
  $('tasks').setAttribute('aria-busy', 'true');
  try {
    const { tasks } = await api('GET', `/v1/tasks?${query}`);
    if (read !== tasksRead) return;
    listed.clear();
    for (const task of tasks) listed.set(task.trace_id, task);
    // A reload redraws every row: the row whose button had the keyboard focus gets it back, so a
    // keyboard user is not thrown to the top of the page by a reload they did not ask for.
    const focused = document.activeElement?.closest?.('#tasks tr')?.dataset.traceId;
    $('tasks').replaceChildren(...tasks.map(taskRow));
    $('tasks-summary').textContent = `${tasks.length} ${tasks.length === 1 ? 'task' : 'tasks'}${
      filtered ? ' match the filters' : ', newest first'
    }.`;
    // A task whose status is rewritten while the list is read can be missing from it (the bucket keeps
    // one revision per key, so the listing may pass over it): the task just sent is shown all the same
    // (unless filters are set: then the list shows what matched).
    if (!filtered && lastSent && !tasks.some((task) => task.trace_id === lastSent.trace_id)) {
      $('tasks').prepend(taskRow(lastSent));
    }
    if (focused) document.querySelector(`#tasks tr[data-trace-id="${focused}"] button`)?.focus();
    // The list may have been read before the task on view reached the status it shows.
    if (view.traceId && view.finished) {
      const cell = document.querySelector(`#tasks tr[data-trace-id="${view.traceId}"] .status`);
      if (cell) cell.textContent = view.status;
    }
  } catch (error) {
    notice(`Tasks could not be loaded: ${error.message}`);
  } finally {
    if (read === tasksRead) $('tasks').removeAttribute('aria-busy');
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
  const cells = taskRowCells(task);
  const classes = ['', 'preview', '', 'status', '', 'number', 'number', 'number', 'error-code'];
  [open, ...cells.slice(1)].forEach((content, index) => {
    const cell = document.createElement('td');
    cell.append(content);
    if (classes[index]) cell.className = classes[index];
    if (index === 1 && task.preview) cell.title = task.preview;
    if (index === 8 && task.error) cell.title = task.error.message;
    if (index === 4 && task.submitted_at) cell.title = task.submitted_at;
    row.append(cell);
  });
  return row;
}

const freshToken = (traceId) => async () =>
  (await api('POST', `/v1/tasks/${encodeURIComponent(traceId)}/stream-token`)).stream_token;

/** Replays an earlier task's events (and follows it if it still runs), saying which task it is. */
function openTask(traceId) {
  const known = listed.get(traceId);
  const what = known
    ? `task ${traceId} (${known.workflow_id}${known.preview ? `: “${known.preview}”` : ''})`
    : `task ${traceId}`;
  notice(`Replaying ${what}.`);
  view.follow(traceId, freshToken(traceId), known);
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

/**
 * Submits `message` to the chosen agent (in `threadId` when given, which supplies the history) and follows
 * the task in the task panel; answers its trace id.
 */
async function submitTask(message, threadId) {
  const reply = await api('POST', '/v1/tasks', {
    workflow_id: chosenAgent(),
    user_id: userId(),
    messages: [{ role: 'user', content: message }],
    ...(threadId ? { thread_id: threadId } : {}),
  });
  notice(`Task ${reply.trace_id} submitted${threadId ? ` in thread ${threadId}` : ''}.`);
  const now = new Date().toISOString();
  lastSent = {
    trace_id: reply.trace_id,
    workflow_id: chosenAgent(),
    status: 'queued',
    submitted_at: now,
    updated_at: now,
    preview: message.slice(0, 120),
  };
  // The reply's token first; later reconnects ask for a new one.
  let first = reply.stream_token;
  const renew = freshToken(reply.trace_id);
  view.follow(
    reply.trace_id,
    async () => {
      const token = first;
      first = undefined;
      return token ?? renew();
    },
    lastSent,
  );
  void loadTasks();
  return reply.trace_id;
}

async function send(event) {
  event.preventDefault();
  const message = $('message').value.trim();
  if (!message) return;
  $('send').disabled = true;
  try {
    await submitTask(message);
  } catch (error) {
    notice(`The task was not accepted: ${error.message}`);
  } finally {
    $('send').disabled = false;
  }
}

async function sendToThread(event) {
  event.preventDefault();
  const message = $('chat-message').value.trim();
  if (!message) return;
  $('chat-send').disabled = true;
  try {
    if (await threads.submit(message)) $('chat-message').value = '';
  } finally {
    $('chat-send').disabled = !threads.threadId;
  }
}

/** The user tasks are submitted as: the field's value, else the default. */
function userId() {
  return $('user-id').value.trim() || DEFAULT_USER;
}

function rememberUser() {
  const user = $('user-id').value.trim();
  if (user && user !== DEFAULT_USER) localStorage.setItem(USER_STORAGE, user);
  else localStorage.removeItem(USER_STORAGE);
}

/** Clears what belonged to the account shown so far: the task on view, the agents, the task list. */
function clearAccountViews() {
  lastSent = undefined;
  view.clear();
  $('agent').replaceChildren();
  $('tasks').replaceChildren();
  $('tasks-summary').textContent = '';
  listed.clear();
  chatTurn = undefined;
  threads.clear();
  schedules.hideDetail();
  $('schedules').replaceChildren();
  actingAccount = '';
  credentials.clear();
}

/** Asks what the key is; an admin key is offered the accounts, an account's key just works. */
async function identifyKey() {
  let caller;
  try {
    caller = await api('GET', '/v1/caller', undefined, { forAccount: false });
  } catch (error) {
    notice(`The key was not accepted: ${error.message}`);
    return;
  }
  keyKind = caller.kind;
  if (keyKind !== 'admin') {
    $('account-form').hidden = true;
    $('acting-as').textContent = caller.account_id ? `Acting for account ${caller.account_id}.` : '';
    actingAccount = caller.account_id ?? '';
    void loadAgents();
    void loadTasks();
    void schedules.load();
    void credentials.load();
    return;
  }
  $('account-form').hidden = false;
  await loadAccounts();
  if (chosenAccount()) {
    $('account').value = chosenAccount();
    actingFor(chosenAccount());
  } else {
    $('acting-as').textContent = '';
    notice('This is an admin key: name the account to act for.');
    $('account').focus();
  }
}

async function loadAccounts() {
  try {
    const { accounts } = await api('GET', '/v1/admin/accounts', undefined, { forAccount: false });
    $('known-accounts').replaceChildren(
      ...accounts.map((account) => {
        const option = document.createElement('option');
        option.value = account;
        return option;
      }),
    );
  } catch (error) {
    notice(`Accounts could not be listed (type the account's id): ${error.message}`);
  }
}

function actingFor(account) {
  $('acting-as').textContent = `Acting for account ${account} (admin key).`;
  actingAccount = account;
  void loadAgents();
  void loadTasks();
  void schedules.load();
  void credentials.load();
}

function useAccount(event) {
  event.preventDefault();
  const account = $('account').value.trim();
  if (!account) return;
  sessionStorage.setItem(ACCOUNT_STORAGE, account);
  clearAccountViews();
  notice(`Acting for account ${account}.`);
  actingFor(account);
}

function useKey(event) {
  event.preventDefault();
  const key = $('api-key').value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_STORAGE, key);
  sessionStorage.removeItem(ACCOUNT_STORAGE);
  keyKind = undefined;
  clearAccountViews();
  $('api-key').value = '';
  $('api-key').placeholder = 'key set for this tab';
  notice('API key set for this tab.');
  void identifyKey();
}

function forgetKey() {
  sessionStorage.removeItem(KEY_STORAGE);
  sessionStorage.removeItem(ACCOUNT_STORAGE);
  keyKind = undefined;
  clearAccountViews();
  $('api-key').placeholder = '';
  $('account-form').hidden = true;
  $('account').value = '';
  $('known-accounts').replaceChildren();
  $('acting-as').textContent = '';
  notice('API key forgotten.');
}

$('key-form').addEventListener('submit', useKey);
$('account-form').addEventListener('submit', useAccount);
$('user-id').value = localStorage.getItem(USER_STORAGE) ?? DEFAULT_USER;
$('user-id').addEventListener('change', () => {
  rememberUser();
  if (keyKind) void credentials.load();
});
$('forget-key').addEventListener('click', forgetKey);
$('run-form').addEventListener('submit', send);
$('message').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('run-form').requestSubmit();
});
$('reload-agents').addEventListener('click', () => void loadAgents());
$('agent').addEventListener('change', showCurrentVersion);
$('reload-tasks').addEventListener('click', () => void loadTasks());
$('load-threads').addEventListener('click', () => void threads.load());
$('new-thread-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void threads.create($('thread-name').value.trim());
  $('thread-name').value = '';
});
$('chat-form').addEventListener('submit', sendToThread);
$('chat-message').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $('chat-form').requestSubmit();
});
$('task-search').addEventListener('submit', (event) => {
  event.preventDefault();
  void loadTasks();
});
// After the form's own reset has cleared the fields.
$('task-search').addEventListener('reset', () => setTimeout(() => void loadTasks()));
$('reload-schedules').addEventListener('click', () => void schedules.load());
$('task-heading').tabIndex = -1;

if (apiKey()) {
  $('api-key').placeholder = 'key set for this tab';
  void identifyKey();
}
