/* global document, EventSource, URLSearchParams */
// Following one task in the console: its events over EventSource (with a stream token, since
// EventSource cannot send the API key), rendered as the streaming answer, the tool calls (arguments,
// result, duration) and a timeline. The mesh's error event arrives as `task_error`: EventSource fires its
// own `error` for connection trouble. A resumed attempt's `attempt_started` cuts the answer back to the
// text that stands (answer-text.js). Tool calls waiting for approval are listed with buttons
// (approvals-view.js); sub-tasks link to their own view, and finished steps show tokens and cost.

import { AnswerText } from './answer-text.js';
import { ApprovalsView } from './approvals-view.js';
import { formatUsage, formatDuration, renderWaterfall, waterfallRows } from './task-waterfall.js';

/** SSE names of the gateway's events (services/gateway/README.md, "Event names"). */
export const EVENT_NAMES = [
  'tool_thinking',
  'tool_call_delta',
  'tool_start',
  'tool_result',
  'tool_progress',
  'message_chunk',
  'attempt_started',
  'approval_requested',
  'approval_decided',
  'subtask_started',
  'subtask_finished',
  'step_finished',
  'model_waiting',
  'done',
  'task_error',
];

const element = (tag, text, className) => {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
};

const usageText = (usage, costUsd) =>
  `${usage.total_tokens} tokens${costUsd === undefined ? '' : ` ($${costUsd.toFixed(4)})`}`;

const pretty = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

export class TaskView {
  constructor(root, { onStatus, onNotice, onOpenTask, api }) {
    this.root = root;
    this.onStatus = onStatus;
    this.onNotice = onNotice;
    this.onOpenTask = onOpenTask;
    this.source = undefined;
    this.approvals = new ApprovalsView(this.byId('approvals'), { api, onNotice });
  }

  /**
   * Shows `traceId`'s events from the start. `streamToken()` answers a fresh token (the first call may
   * answer the one the submit reply carried); it is asked again when a reconnect is refused because the
   * token expired, and the stream resumes after the last event shown.
   */
  follow(traceId, streamToken, known) {
    this.close();
    this.traceId = traceId;
    // The waterfall counts from the submit time when the list (or the submit) told it.
    this.origin = known?.submitted_at;
    this.events = [];
    this.lastSeq = 0;
    this.started = undefined;
    this.calls = new Map();
    this.answerText = new AnswerText();
    this.finished = false;
    this.streamToken = streamToken;
    this.renewals = 0;
    this.byId('task-id').textContent = traceId;
    this.byId('task-version').textContent = '';
    this.byId('answer').textContent = '';
    this.byId('task-error').hidden = true;
    this.byId('task-error').textContent = '';
    this.byId('tool-calls').replaceChildren();
    this.byId('timeline').replaceChildren();
    this.byId('waterfall').replaceChildren();
    this.byId('waterfall-summary').textContent = '';
    this.byId('task-facts').textContent = known?.submitted_at
      ? `Submitted ${new Date(known.submitted_at).toLocaleString()}${known.preview ? ` · “${known.preview}”` : ''}`
      : '';
    this.approvals.reset(traceId);
    this.setStatus('connecting');
    void this.open();
  }

  close() {
    this.source?.close();
    this.source = undefined;
  }

  /** Stops following and shows no task (another account's tasks are not this one's to show). */
  clear() {
    this.close();
    this.traceId = undefined;
    this.finished = false;
    this.status = undefined;
    this.byId('task-id').textContent = 'none yet';
    this.byId('task-version').textContent = '';
    this.byId('task-status').textContent = '–';
    this.byId('answer').textContent = '';
    this.byId('task-error').hidden = true;
    this.byId('task-error').textContent = '';
    this.byId('tool-calls').replaceChildren();
    this.byId('timeline').replaceChildren();
    this.byId('waterfall').replaceChildren();
    this.byId('waterfall-summary').textContent = '';
    this.byId('task-facts').textContent = '';
    this.events = [];
    this.approvals.reset(undefined);
  }

  byId(id) {
    return this.root.querySelector(`#${id}`);
  }

  setStatus(status) {
    this.status = status;
    this.byId('task-status').textContent = status;
    this.onStatus?.(this.traceId, status);
  }

  async open() {
    const traceId = this.traceId;
    let token;
    try {
      token = await this.streamToken();
    } catch (error) {
      this.setStatus('unavailable');
      this.onNotice(`Cannot open the task's events: ${error.message}`);
      return;
    }
    if (traceId !== this.traceId) return;
    const query = new URLSearchParams({ token });
    if (this.lastSeq > 0) query.set('last_event_id', String(this.lastSeq));
    const source = new EventSource(`/v1/tasks/${encodeURIComponent(traceId)}/events?${query}`);
    this.source = source;
    for (const name of EVENT_NAMES) {
      source.addEventListener(name, (message) => {
        if (source !== this.source) return;
        this.take(JSON.parse(message.data));
      });
    }
    source.addEventListener('open', () => {
      if (!this.finished && this.status !== 'waiting_approval') this.setStatus('running');
    });
    // EventSource's own error: the connection failed or dropped. It reconnects by itself (sending
    // Last-Event-ID) unless the gateway refused, e.g. with 401 once the token has expired: then a new
    // token resumes the stream, a few times at most.
    source.addEventListener('error', () => {
      if (source !== this.source || this.finished) return;
      if (source.readyState !== EventSource.CLOSED) return;
      this.close();
      if (this.renewals >= 3) {
        this.setStatus('disconnected');
        this.onNotice('The event stream was refused; reopen the task to try again.');
        return;
      }
      this.renewals += 1;
      void this.open();
    });
  }

  take(event) {
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    this.renewals = 0;
    const at = Date.parse(event.ts);
    this.started ??= at;
    this.timeline(event, at - this.started);
    this.events.push(event);
    // The first event names the agent version the task ran (a pinned one, or the current one at assembly).
    if (event.agent) {
      this.byId('task-version').textContent = ` · ${event.agent.workflow_id} version ${event.agent.version}`;
    }
    // Text deltas move no bar (but for the last event's time): the waterfall is drawn on other events.
    if (event.type !== 'message_chunk' && event.type !== 'tool_thinking' && event.type !== 'tool_call_delta')
      this.drawWaterfall();
    switch (event.type) {
      case 'message_chunk':
        this.answerText.add(event);
        this.byId('answer').append(event.data.delta);
        break;
      case 'attempt_started':
        // The dead attempt's text after drop_text_after_seq is on screen; the new attempt sends it again.
        if (this.answerText.add(event)) this.byId('answer').textContent = this.answerText.text;
        break;
      case 'tool_call_delta':
        this.toolArguments(event.data);
        break;
      case 'tool_start':
        this.toolStart(event.data);
        break;
      case 'tool_result':
        this.toolResult(event.data);
        break;
      case 'tool_progress':
        this.toolProgress(event.data);
        break;
      case 'approval_requested':
        this.approvals.requested(event.data);
        this.setStatus('waiting_approval');
        break;
      case 'approval_decided':
        void this.approvals.refresh();
        if (this.status === 'waiting_approval') this.setStatus('running');
        break;
      case 'done':
        // The final answer is authoritative (a reconnect could have skipped deltas of an older attempt).
        this.byId('answer').textContent = event.data.message;
        this.finish('done');
        break;
      case 'error': {
        const line = this.byId('task-error');
        line.textContent = `Error ${event.data.code}: ${event.data.message}`;
        line.hidden = false;
        this.finish('error');
        break;
      }
    }
  }

  drawWaterfall() {
    const waterfall = waterfallRows(this.events, this.origin);
    renderWaterfall(this.byId('waterfall'), waterfall, this.onOpenTask);
    const usage = formatUsage(waterfall.tokens, waterfall.costUsd);
    this.byId('waterfall-summary').textContent = `${formatDuration(waterfall.totalMs)}${
      usage ? ` · ${usage}` : ''
    } · ${waterfall.rows.length} steps`;
  }

  finish(status) {
    this.drawWaterfall();
    this.finished = true;
    this.close();
    this.setStatus(status);
  }

  timeline(event, offsetMs) {
    const item = element('li', `+${offsetMs} ms  #${event.seq} ${event.type}${this.detailOf(event)}`);
    if (event.type === 'subtask_started' && this.onOpenTask) {
      const open = element('button', 'Follow sub-task');
      open.type = 'button';
      open.setAttribute('aria-label', `Follow sub-task ${event.data.subtask_trace_id}`);
      open.addEventListener('click', () => this.onOpenTask(event.data.subtask_trace_id));
      item.append(' ', open);
    }
    this.byId('timeline').append(item);
  }

  detailOf(event) {
    switch (event.type) {
      case 'approval_requested':
        return ` ${event.data.tool} waits for approval: ${event.data.reason}`;
      case 'approval_decided':
        return ` ${event.data.tool} ${event.data.approved ? 'approved' : 'denied'}`;
      case 'subtask_started':
        return ` ${event.data.tool} → ${event.data.workflow_id} ${event.data.subtask_trace_id}`;
      case 'subtask_finished':
        return ` ${event.data.tool} ${event.data.subtask_trace_id} ${event.data.status}${
          event.data.error ? ` ${event.data.error.code}` : ''
        }`;
      case 'step_finished':
        return ` step ${event.data.step}: ${usageText(event.data.usage, event.data.cost_usd)}; task ${usageText(
          event.data.total_usage,
          event.data.total_cost_usd,
        )}${event.data.model ? ` by ${event.data.model}` : ''}`;
      case 'model_waiting':
        return ` ${event.data.model} waits: its key's ${event.data.limit} limit (${event.data.value}) is full`;
    }
    const detail =
      event.type === 'tool_start' || event.type === 'tool_result' || event.type === 'tool_progress'
        ? ` ${event.data.tool}`
        : event.type === 'message_chunk' || event.type === 'tool_thinking' || event.type === 'tool_call_delta'
          ? ` (${event.data.delta.length} chars)`
          : event.type === 'error'
            ? ` ${event.data.code}`
            : event.type === 'attempt_started'
              ? ` attempt ${event.attempt} resumed; text after #${event.data.drop_text_after_seq} restarts`
              : '';
    return detail;
  }

  /** A call's arguments as the model streams them, before its tool_start shows them parsed. */
  toolArguments({ call_id, tool, delta }) {
    const streaming = this.calls.get(call_id);
    if (streaming === undefined) {
      const item = element('li');
      item.dataset.callId = call_id;
      item.append(element('strong', tool), element('span', ' writing arguments…', 'state'));
      item.append(element('div', 'Arguments'), element('pre', delta));
      this.calls.set(call_id, item);
      this.byId('tool-calls').append(item);
      return;
    }
    streaming.querySelector('pre')?.append(delta);
  }

  toolStart({ call_id, tool, arguments: args }) {
    const streamed = this.calls.get(call_id);
    if (streamed !== undefined) {
      // Shown while streaming: now the parsed arguments, and the call runs.
      streamed.querySelector('.state').textContent = ' running…';
      streamed.querySelector('pre').textContent = pretty(args);
      return;
    }
    const item = element('li');
    item.dataset.callId = call_id;
    item.append(element('strong', tool), element('span', ' running…', 'state'));
    item.append(element('div', 'Arguments'), element('pre', pretty(args)));
    this.calls.set(call_id, item);
    this.byId('tool-calls').append(item);
  }

  /** A running call's latest progress (MCP tools), in place of "running…". */
  toolProgress({ call_id, progress, total, message }) {
    const state = this.calls.get(call_id)?.querySelector('.state');
    if (state === null || state === undefined) return;
    const amount = total === undefined ? `${progress}` : `${progress}/${total}`;
    state.textContent = ` running… ${amount}${message ? ` ${message}` : ''}`;
  }

  toolResult(data) {
    let item = this.calls.get(data.call_id);
    if (!item) {
      this.toolStart({ call_id: data.call_id, tool: data.tool, arguments: '(not seen)' });
      item = this.calls.get(data.call_id);
    }
    const state = item.querySelector('.state');
    state.textContent = data.ok ? ` ok in ${data.duration_ms} ms` : ` failed in ${data.duration_ms} ms`;
    state.className = `state ${data.ok ? 'ok' : 'failed'}`;
    item.append(
      element('div', data.ok ? 'Result' : 'Error'),
      element('pre', pretty(data.ok ? data.result : data.error)),
    );
  }
}
