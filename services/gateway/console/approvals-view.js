/* global document */
// The tool calls a task waits on, with Approve / Deny buttons and an optional comment: read from
// `GET /v1/tasks/{id}/approvals` whenever the task's events say an approval was requested or decided,
// decided with `POST /v1/tasks/{id}/approvals/{call_id}`. The arguments come from the call's
// `approval_requested` event (the approval record does not keep them). Native buttons, labelled inputs and
// a polite live region keep it usable from the keyboard and a screen reader.

const element = (tag, text, className) => {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
};

const pretty = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

export class ApprovalsView {
  /** `list` is the <ol> to fill; `api(method, path, body)` calls the gateway with the key. */
  constructor(list, { api, onNotice }) {
    this.list = list;
    this.api = api;
    this.onNotice = onNotice;
    this.reset(undefined);
  }

  reset(traceId) {
    this.traceId = traceId;
    this.argumentsOf = new Map();
    this.approvals = [];
    this.render();
  }

  /** Remembers a call's arguments from its `approval_requested` event, then reads the approvals. */
  requested(data) {
    this.argumentsOf.set(data.call_id, data.arguments);
    void this.refresh();
  }

  async refresh() {
    const traceId = this.traceId;
    if (traceId === undefined) return;
    try {
      const answer = await this.api('GET', `/v1/tasks/${encodeURIComponent(traceId)}/approvals`);
      if (traceId === this.traceId) this.show(answer);
    } catch (error) {
      this.onNotice(`Approvals could not be loaded: ${error.message}`);
    }
  }

  show(answer) {
    this.approvals = answer.approvals;
    this.render();
  }

  async decide(callId, approve, comment) {
    const traceId = this.traceId;
    const body = comment ? { approve, comment } : { approve };
    try {
      const answer = await this.api(
        'POST',
        `/v1/tasks/${encodeURIComponent(traceId)}/approvals/${encodeURIComponent(callId)}`,
        body,
      );
      if (traceId !== this.traceId) return;
      this.show(answer);
      this.onNotice(
        `Call ${callId} ${approve ? 'approved' : 'denied'}.${answer.resumed ? ' The task goes on.' : ''}`,
      );
    } catch (error) {
      this.onNotice(`The decision was not taken: ${error.message}`);
      void this.refresh();
    }
  }

  render() {
    this.list.replaceChildren(...this.approvals.map((approval) => this.item(approval)));
    const empty = this.list.parentElement?.querySelector('.no-approvals');
    if (empty) empty.hidden = this.approvals.length > 0;
  }

  item(approval) {
    const item = element('li');
    item.dataset.callId = approval.call_id;
    item.append(
      element('strong', approval.tool),
      element('span', ` ${approval.state}`, `state ${approval.state}`),
    );
    item.append(element('div', `Reason: ${approval.reason}`));
    if (this.argumentsOf.has(approval.call_id)) {
      item.append(
        element('div', 'Arguments'),
        element('pre', pretty(this.argumentsOf.get(approval.call_id))),
      );
    }
    if (approval.state !== 'pending') {
      if (approval.comment) item.append(element('div', `Comment: ${approval.comment}`));
      return item;
    }
    item.append(element('div', `Expires ${new Date(approval.expires_at).toLocaleString()}`));
    const commentId = `approval-comment-${approval.call_id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const label = element('label', 'Comment (optional)');
    label.htmlFor = commentId;
    const comment = element('input');
    comment.id = commentId;
    comment.type = 'text';
    comment.maxLength = 2000;
    const approve = element('button', 'Approve');
    approve.type = 'button';
    approve.setAttribute('aria-label', `Approve ${approval.tool} call ${approval.call_id}`);
    const deny = element('button', 'Deny');
    deny.type = 'button';
    deny.setAttribute('aria-label', `Deny ${approval.tool} call ${approval.call_id}`);
    const decide = (yes) => () => {
      approve.disabled = true;
      deny.disabled = true;
      void this.decide(approval.call_id, yes, comment.value.trim());
    };
    approve.addEventListener('click', decide(true));
    deny.addEventListener('click', decide(false));
    const row = element('div', undefined, 'row');
    row.append(label, comment, approve, deny);
    item.append(row);
    return item;
  }
}
