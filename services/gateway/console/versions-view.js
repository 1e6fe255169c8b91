/* global document, MutationObserver */
// The chosen agent's versions: the kept ones (GET /v1/admin/agents/{id}/versions: number, short digest,
// when written, which is current), the differences between two of them (GET .../diff?from=&to=, drawn
// from its {path, op, from?, to?} entries) and a Roll back button on each version that is not current
// (POST .../rollback {version}) behind a confirm step. These are management calls: an admin key acting
// for an account may make them, an account's API key gets 403, so for such a key the panel only says so.
// The pure functions at the top (what a row or a change reads as) are unit-tested in Node.

/** A digest as a person compares it at a glance: the algorithm and the first 12 hex digits. */
export function shortDigest(digest) {
  if (typeof digest !== 'string') return '–';
  const [algorithm, hex] = digest.includes(':') ? digest.split(':', 2) : ['', digest];
  const head = (hex ?? '').slice(0, 12);
  return algorithm ? `${algorithm}:${head}` : head;
}

/** When a version was written, with its date, in UTC (`2026-11-28 03:20:05 UTC`); `–` when unknown. */
export function formatCreated(createdAt) {
  if (typeof createdAt !== 'string') return '–';
  const time = new Date(createdAt);
  if (Number.isNaN(time.getTime())) return '–';
  return `${time.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A value of a definition as JSON on one line; `–` where a side has none (added or removed). */
export function formatValue(value) {
  return value === undefined ? '–' : JSON.stringify(value);
}

/** The rows of the versions table, in the order the API lists them (newest first). */
export function versionRows(list) {
  return list.versions.map((version) => ({
    version: version.version,
    digest: version.digest,
    digestShort: shortDigest(version.digest),
    created: formatCreated(version.created_at),
    current: version.current === true,
  }));
}

/** The rows of a diff table: the path (`(whole definition)` for `""`), the change, and both sides. */
export function diffRows(changes) {
  return changes.map((change) => ({
    path: change.path === '' ? '(whole definition)' : change.path,
    op: change.op,
    sign: change.op === 'added' ? '+' : change.op === 'removed' ? '−' : '~',
    from: change.op === 'added' ? '–' : formatValue(change.from),
    to: change.op === 'removed' ? '–' : formatValue(change.to),
  }));
}

/** One sentence saying what a diff found, for the caption and the screen reader. */
export function diffSummary(diff) {
  const between = `version ${diff.from.version} and version ${diff.to.version}`;
  const count = diff.changes.length;
  if (count === 0) return `No differences between ${between}.`;
  return `${count} ${count === 1 ? 'difference' : 'differences'} between ${between}.`;
}

/** Whether a key of this kind may make management calls (`GET /v1/caller`'s `kind`). */
export function mayManageAgents(kind) {
  return kind === 'admin' || kind === 'trusted';
}

const element = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value;
    else if (name === 'className') node.className = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
};

const cell = (content, className) => element('td', className ? { className } : {}, content);

export class VersionsView {
  /**
   * `root` is an empty element the view fills; `agentSelect` the page's agent picker, whose choice it
   * follows; `api(method, path, body)` calls the gateway with the key; `canManage()` says whether the key
   * may make management calls; `onChanged()` runs after a rollback (the page re-reads its agents).
   */
  constructor(root, { api, agentSelect, canManage, onNotice, onChanged }) {
    this.api = api;
    this.agentSelect = agentSelect;
    this.canManage = canManage;
    this.onNotice = onNotice;
    this.onChanged = onChanged;
    this.reads = 0;
    this.build(root);
    agentSelect.addEventListener('change', () => void this.load());
    // The page replaces the picker's options when it reads the agents (a new key, account or reload).
    new MutationObserver(() => void this.load()).observe(agentSelect, { childList: true });
    void this.load();
  }

  build(root) {
    this.heading = element('h2', { id: 'versions-heading', tabindex: '-1', text: 'Agent versions' });
    this.note = element('p', { id: 'versions-note', className: 'hint', role: 'status' });
    this.reload = element('button', { type: 'button', text: 'Reload versions' });
    this.reload.addEventListener('click', () => void this.load());
    this.caption = element('caption', { className: 'visually-hidden' });
    this.rows = element('tbody', { id: 'version-rows' });
    this.table = element(
      'table',
      { id: 'versions-table' },
      this.caption,
      element(
        'thead',
        {},
        element(
          'tr',
          {},
          ...['Version', 'Digest', 'Written', 'State'].map((name) =>
            element('th', { scope: 'col', text: name }),
          ),
        ),
      ),
      this.rows,
    );

    this.confirmText = element('p', { id: 'rollback-question' });
    this.confirmButton = element('button', { type: 'button', id: 'rollback-confirm' });
    this.cancelButton = element('button', { type: 'button', text: 'Cancel' });
    this.confirmButton.addEventListener('click', () => void this.rollBack());
    this.cancelButton.addEventListener('click', () => this.cancelRollback());
    this.confirmBox = element(
      'div',
      { role: 'group', 'aria-labelledby': 'rollback-question', className: 'confirm', hidden: '' },
      this.confirmText,
      element('div', { className: 'row' }, this.confirmButton, this.cancelButton),
    );
    this.confirmBox.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.cancelRollback();
    });

    this.fromSelect = element('select', { id: 'diff-from', name: 'diff-from' });
    this.toSelect = element('select', { id: 'diff-to', name: 'diff-to' });
    // Which pickers the person set: only those keep their version when the list is read again (an untouched
    // one follows the defaults, so a new current version shows up in "To").
    this.picked = { from: false, to: false };
    this.fromSelect.addEventListener('change', () => (this.picked.from = true));
    this.toSelect.addEventListener('change', () => (this.picked.to = true));
    this.diffForm = element(
      'form',
      { id: 'diff-form', className: 'row' },
      element('label', { for: 'diff-from', text: 'From version' }),
      this.fromSelect,
      element('label', { for: 'diff-to', text: 'To version' }),
      this.toSelect,
      element('button', { type: 'submit', text: 'Show differences' }),
    );
    this.diffForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.showDiff();
    });
    this.diffSummary = element('p', { id: 'diff-summary', role: 'status' });
    this.diffCaption = element('caption', { className: 'visually-hidden' });
    this.fromHeader = element('th', { scope: 'col', text: 'From' });
    this.toHeader = element('th', { scope: 'col', text: 'To' });
    this.diffBody = element('tbody', { id: 'diff-rows' });
    this.diffTable = element(
      'table',
      { id: 'diff-table', className: 'diff', hidden: '' },
      this.diffCaption,
      element(
        'thead',
        {},
        element(
          'tr',
          {},
          element('th', { scope: 'col', text: 'Path' }),
          element('th', { scope: 'col', text: 'Change' }),
          this.fromHeader,
          this.toHeader,
        ),
      ),
      this.diffBody,
    );
    this.body = element(
      'div',
      { hidden: '' },
      this.reload,
      this.table,
      this.confirmBox,
      element('h3', { text: 'Differences' }),
      this.diffForm,
      this.diffSummary,
      this.diffTable,
    );
    root.replaceChildren(this.heading, this.note, this.body);
  }

  /** Reads the chosen agent's versions, or says why there are none to show. */
  async load() {
    const read = ++this.reads;
    const agent = this.agentSelect.value;
    // A re-read of the same agent's list leaves an open rollback question open (render closes it if the
    // list changed under it).
    if (agent !== this.agent) this.closeConfirm();
    this.agent = agent;
    if (!agent) {
      this.showNote('Choose an agent to see its versions.');
      return;
    }
    if (!this.canManage()) {
      this.showNote(
        "Versions, differences and rollback are management calls: use an admin key acting for the account (an account's API key may not manage agents).",
      );
      return;
    }
    // Busy while the list is read, for assistive technology (and for a test to know the read is over).
    this.body.setAttribute('aria-busy', 'true');
    try {
      const list = await this.api('GET', `${this.base(agent)}/versions`);
      if (read !== this.reads) return;
      this.render(list);
    } catch (error) {
      if (read !== this.reads) return;
      this.showNote(`The versions of ${agent} could not be read: ${error.message}`);
    } finally {
      if (read === this.reads) this.body.removeAttribute('aria-busy');
    }
  }

  base(agent) {
    return `/v1/admin/agents/${encodeURIComponent(agent)}`;
  }

  /** Says why no versions are shown (nothing is being read any more). */
  showNote(text) {
    this.shown = undefined;
    this.body.removeAttribute('aria-busy');
    this.note.textContent = text;
    this.body.hidden = true;
    this.rows.replaceChildren();
    this.clearDiff();
  }

  render(list) {
    // The page re-reads its agents now and then, and each read reloads this panel: a list that has not
    // changed leaves the table, the person's choice of versions and the differences shown as they are.
    const shown = JSON.stringify([list.workflow_id, list.scope, list.current, list.versions]);
    if (shown === this.shown && !this.body.hidden) return;
    const sameAgent = this.list?.workflow_id === list.workflow_id;
    if (!sameAgent) this.picked = { from: false, to: false };
    const chosen = {
      from: this.picked.from ? this.fromSelect.value : undefined,
      to: this.picked.to ? this.toSelect.value : undefined,
    };
    this.shown = shown;
    this.list = list;
    this.closeConfirm();
    const shared = list.scope === 'shared';
    this.note.textContent = shared
      ? `Agent ${list.workflow_id} is in the shared catalogue: its versions may be compared here; only an admin key acting for no account may roll it back.`
      : `Agent ${list.workflow_id} runs version ${list.current}.`;
    this.caption.textContent = `Kept versions of agent ${list.workflow_id}, newest first`;
    this.rows.replaceChildren(...versionRows(list).map((row) => this.row(row, shared)));
    const options = (chosen) =>
      list.versions.map((version) => {
        const option = element('option', {
          value: String(version.version),
          text: `${version.version}${version.current ? ' (current)' : ''}`,
        });
        option.selected = version.version === chosen;
        return option;
      });
    // By default: the version before the current one against the current one; a choice made for this agent
    // stays while its versions are still kept.
    const kept = (value) => list.versions.find((version) => String(version.version) === value)?.version;
    const older = list.versions.find((version) => version.version < list.current) ?? list.versions.at(-1);
    this.fromSelect.replaceChildren(...options(kept(chosen.from) ?? older?.version));
    this.toSelect.replaceChildren(...options(kept(chosen.to) ?? list.current));
    this.clearDiff();
    this.body.hidden = false;
  }

  row(version, shared) {
    const row = element('tr');
    row.dataset.version = String(version.version);
    const digest = element('span', { className: 'mono', title: version.digest, text: version.digestShort });
    let state;
    if (version.current) state = element('strong', { text: 'current' });
    else if (shared) state = '–';
    else {
      state = element('button', {
        type: 'button',
        text: 'Roll back',
        'aria-label': `Roll back ${this.list.workflow_id} to version ${version.version}`,
      });
      state.addEventListener('click', (event) => this.askRollback(version.version, event.currentTarget));
    }
    row.append(cell(String(version.version)), cell(digest), cell(version.created), cell(state));
    return row;
  }

  askRollback(version, opener) {
    this.pending = { agent: this.list.workflow_id, version, opener };
    this.confirmText.textContent = `Make version ${version} the current version of ${this.list.workflow_id}? Tasks submitted from now on without a pin run it.`;
    this.confirmButton.textContent = `Roll back to version ${version}`;
    this.confirmBox.hidden = false;
    this.confirmButton.focus();
  }

  cancelRollback() {
    const opener = this.pending?.opener;
    this.closeConfirm();
    if (opener?.isConnected) opener.focus();
  }

  closeConfirm() {
    this.pending = undefined;
    this.confirmBox.hidden = true;
  }

  async rollBack() {
    const pending = this.pending;
    if (!pending) return;
    this.confirmButton.disabled = true;
    try {
      const current = await this.api('POST', `${this.base(pending.agent)}/rollback`, {
        version: pending.version,
      });
      this.onNotice(`Agent ${pending.agent} now runs version ${current.version}.`);
      this.closeConfirm();
      await this.load();
      this.heading.focus();
      this.onChanged?.();
    } catch (error) {
      this.onNotice(`The rollback was refused: ${error.message}`);
    } finally {
      this.confirmButton.disabled = false;
    }
  }

  clearDiff() {
    this.diffSummary.textContent = '';
    this.diffBody.replaceChildren();
    this.diffTable.hidden = true;
  }

  async showDiff() {
    const agent = this.agent;
    const from = this.fromSelect.value;
    const to = this.toSelect.value;
    if (!agent || !from || !to) return;
    const query = `?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    try {
      const diff = await this.api('GET', `${this.base(agent)}/diff${query}`);
      if (agent !== this.agent) return;
      this.renderDiff(diff);
    } catch (error) {
      this.clearDiff();
      this.diffSummary.textContent = `The differences could not be read: ${error.message}`;
    }
  }

  renderDiff(diff) {
    const summary = diffSummary(diff);
    this.diffSummary.textContent = summary;
    this.diffCaption.textContent = summary;
    this.fromHeader.textContent = `Version ${diff.from.version}`;
    this.toHeader.textContent = `Version ${diff.to.version}`;
    this.diffBody.replaceChildren(
      ...diffRows(diff.changes).map((change) => {
        const row = element('tr', { className: change.op });
        row.append(
          cell(change.path, 'mono'),
          cell(`${change.sign} ${change.op}`),
          cell(change.from, 'mono value'),
          cell(change.to, 'mono value'),
        );
        return row;
      }),
    );
    this.diffTable.hidden = diff.changes.length === 0;
  }
}
