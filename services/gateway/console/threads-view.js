/* global document */
// The console's chat on threads (the threads API: `GET/POST /v1/threads`, `GET /v1/threads/{id}`, and
// `POST /v1/tasks` with `thread_id`): the account's threads, a new thread, the open thread's transcript —
// each turn's user message, the assistant's tool calls with their results, and its answer —, and a message
// box that sends the next turn. The turn in progress streams in the task panel (task-view.js: the answer in
// an aria-live region, its tool calls, and its approvals with Approve / Deny from approvals-view.js); when
// it ends, the transcript is read again. Threads are asked for only when the user opens the chat, so a
// gateway without the threads API costs the page nothing until then.
// `threadTranscript` is pure (services/gateway/src/console-threads-view.test.ts runs it in Node).

const textOf = (content) =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content
          .filter((part) => part && part.type === 'text')
          .map((part) => part.text)
          .join(' ')
      : '';

const parsed = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/**
 * What a thread's stored entries read as, oldest first: `{kind: 'user'|'assistant'|'tool'|'compaction',
 * text, trace_id?, tool?, arguments?, result?, interrupted?}`. A tool call and its result (matched by call
 * id) are one item; a compaction says what it replaced.
 */
export function threadTranscript(entries) {
  const items = [];
  for (const { entry } of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (entry.type === 'compaction') {
      items.push({
        kind: 'compaction',
        text:
          entry.method === 'summary'
            ? `Earlier turns summarised: ${entry.summary ?? ''}`
            : `Earlier turns cut from the history${entry.fallback_reason ? ` (${entry.fallback_reason})` : ''}`,
      });
      continue;
    }
    const calls = new Map();
    for (const message of entry.messages) {
      if (message.role === 'user') {
        items.push({ kind: 'user', text: textOf(message.content), trace_id: entry.trace_id });
      } else if (message.role === 'assistant') {
        for (const call of message.tool_calls ?? []) {
          const item = {
            kind: 'tool',
            tool: call.function?.name ?? '?',
            arguments: parsed(call.function?.arguments ?? ''),
            trace_id: entry.trace_id,
          };
          calls.set(call.id, item);
          items.push(item);
        }
        const text = textOf(message.content);
        if (text) items.push({ kind: 'assistant', text, trace_id: entry.trace_id });
      } else if (message.role === 'tool') {
        const item = calls.get(message.tool_call_id);
        if (item) item.result = parsed(textOf(message.content));
      }
    }
    if (entry.interrupted) {
      items.push({ kind: 'assistant', text: '(interrupted by a newer message)', interrupted: true });
    }
  }
  return items;
}

const element = (tag, text, className) => {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
};

const pretty = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

export class ThreadsView {
  /**
   * `root` holds #threads (the list), #thread-title, #thread-transcript and #chat-form; `send(message,
   * threadId)` submits a turn and answers its trace id; `onNotice` reports.
   */
  constructor(root, { api, onNotice, send }) {
    this.root = root;
    this.api = api;
    this.onNotice = onNotice;
    this.send = send;
    this.threadId = undefined;
    this.pending = undefined;
  }

  byId(id) {
    return this.root.querySelector(`#${id}`);
  }

  clear() {
    this.threadId = undefined;
    this.pending = undefined;
    this.byId('threads').replaceChildren();
    this.byId('thread-transcript').replaceChildren();
    this.byId('thread-title').textContent = 'No thread open';
    this.byId('chat-send').disabled = true;
  }

  async load() {
    try {
      const { threads } = await this.api('GET', '/v1/threads?limit=50');
      this.byId('threads').replaceChildren(
        ...threads.map((thread) => {
          const item = element('li');
          const open = element('button', thread.metadata?.title ?? thread.thread_id);
          open.type = 'button';
          open.setAttribute('aria-label', `Open thread ${thread.thread_id}`);
          open.addEventListener('click', () => void this.open(thread.thread_id));
          item.append(open, ` ${new Date(thread.updated_at).toLocaleString()} · ${thread.status}`);
          item.dataset.threadId = thread.thread_id;
          return item;
        }),
      );
    } catch (error) {
      this.onNotice(`Threads could not be loaded: ${error.message}`);
    }
  }

  async create(title) {
    try {
      const thread = await this.api('POST', '/v1/threads', title ? { metadata: { title } } : {});
      await this.load();
      await this.open(thread.thread_id);
      this.byId('chat-message').focus();
    } catch (error) {
      this.onNotice(`The thread was not created: ${error.message}`);
    }
  }

  async open(threadId) {
    this.threadId = threadId;
    this.byId('chat-send').disabled = false;
    try {
      const thread = await this.api('GET', `/v1/threads/${encodeURIComponent(threadId)}`);
      if (threadId !== this.threadId) return;
      this.byId('thread-title').textContent = `Thread ${thread.metadata?.title ?? thread.thread_id} · ${
        thread.status
      }${thread.active_trace_id ? ` (running ${thread.active_trace_id.slice(0, 8)})` : ''}`;
      this.render(threadTranscript(thread.entries));
    } catch (error) {
      this.onNotice(`The thread could not be read: ${error.message}`);
    }
  }

  render(items) {
    const list = this.byId('thread-transcript');
    list.replaceChildren(
      ...items.map((item) => {
        const li = element('li', undefined, `chat-${item.kind}`);
        if (item.kind === 'tool') {
          li.append(element('strong', `Tool ${item.tool}`), element('pre', pretty(item.arguments)));
          if (item.result !== undefined)
            li.append(element('div', 'Result'), element('pre', pretty(item.result)));
        } else {
          const who = { user: 'You', assistant: 'Agent', compaction: 'History' }[item.kind];
          li.append(element('strong', `${who}: `), element('span', item.text));
        }
        return li;
      }),
    );
    // The message just sent shows at once; the task panel streams its answer.
    if (this.pending) {
      const li = element('li', undefined, 'chat-user pending');
      li.append(element('strong', 'You: '), element('span', this.pending));
      list.append(li);
    }
  }

  /** Sends `message` as the open thread's next turn; answers whether it was accepted. */
  async submit(message) {
    if (!this.threadId || !message) return false;
    this.pending = message;
    await this.open(this.threadId);
    try {
      await this.send(message, this.threadId);
      return true;
    } catch (error) {
      this.pending = undefined;
      await this.open(this.threadId);
      this.onNotice(`The message was not accepted: ${error.message}`);
      return false;
    }
  }

  /** The turn of `threadId` ended (the task panel saw its terminal event): the transcript holds it now. */
  async turnEnded(threadId) {
    if (threadId !== this.threadId) return;
    this.pending = undefined;
    await this.open(threadId);
    void this.load();
  }
}
