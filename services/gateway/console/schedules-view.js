/* global document */
// The account's scheduled runs: one row per schedule (GET /v1/schedules) with its agent, its cron and zone
// or interval, its next fire time, and Show, Pause / Resume, Run now and Delete buttons (GET
// /v1/schedules/{id}; POST .../pause, /resume, /run; DELETE). Show fills the detail below the table with the
// next fire times and the last runs (each with its task's status and a button that opens the task); a
// run-now opens its task in the task view; Delete asks to be confirmed in the row (Escape backs out).
// Creating schedules is the CLI's or the API's (agentmesh schedules create).

const cell = (content, className) => {
  const node = document.createElement('td');
  node.append(content);
  if (className) node.className = className;
  return node;
};

const button = (text, label, onClick) => {
  const node = document.createElement('button');
  node.type = 'button';
  node.textContent = text;
  node.setAttribute('aria-label', label);
  node.addEventListener('click', onClick);
  return node;
};

/** How a schedule fires, as a person reads it. */
export function scheduleTiming(schedule) {
  return schedule.cron !== undefined
    ? `${schedule.cron} (${schedule.timezone ?? 'UTC'})`
    : `every ${schedule.interval_seconds} s`;
}

export class SchedulesView {
  /**
   * `body` is the table's <tbody>, `detail` the section that shows one schedule; `api(method, path, body)`
   * calls the gateway with the key.
   */
  constructor(body, { api, onNotice, onOpenTask, detail }) {
    this.body = body;
    this.detail = detail;
    /** The schedule the detail shows: it is read again after a change to it. */
    this.shown = undefined;
    this.api = api;
    this.onNotice = onNotice;
    this.onOpenTask = onOpenTask;
    this.reads = 0;
  }

  async load() {
    const read = ++this.reads;
    try {
      const { schedules } = await this.api('GET', '/v1/schedules');
      if (read !== this.reads) return;
      this.body.replaceChildren(...schedules.map((schedule) => this.row(schedule)));
      if (this.shown !== undefined) {
        if (schedules.some((schedule) => schedule.schedule_id === this.shown)) await this.show(this.shown);
        else this.hideDetail();
      }
    } catch (error) {
      this.onNotice(`Schedules could not be loaded: ${error.message}`);
    }
  }

  row(schedule) {
    const row = document.createElement('tr');
    row.dataset.scheduleId = schedule.schedule_id;
    const name = schedule.name ?? schedule.schedule_id;
    const path = `/v1/schedules/${encodeURIComponent(schedule.schedule_id)}`;
    const toggle = schedule.paused
      ? button(
          'Resume',
          `Resume schedule ${name}`,
          () => void this.act(`${path}/resume`, `Schedule ${name} resumed.`),
        )
      : button(
          'Pause',
          `Pause schedule ${name}`,
          () => void this.act(`${path}/pause`, `Schedule ${name} paused.`),
        );
    const run = button('Run now', `Run schedule ${name} now`, () => void this.runNow(path, name));
    const show = button('Show', `Show schedule ${name}`, () => void this.show(schedule.schedule_id, true));
    const actions = document.createElement('span');
    const remove = button('Delete', `Delete schedule ${name}`, () => this.confirmDelete(actions, path, name));
    actions.append(show, ' ', toggle, ' ', run, ' ', remove);
    row.append(
      cell(name),
      cell(schedule.workflow_id),
      cell(scheduleTiming(schedule), 'mono'),
      cell(schedule.paused ? 'paused' : (schedule.next_fire_at ?? '–')),
      cell(actions),
    );
    return row;
  }

  /** Fills the detail with one schedule's next fire times and last runs; `focus` moves the keyboard there. */
  async show(scheduleId, focus = false) {
    if (!this.detail) return;
    const $ = (id) => this.detail.querySelector(`#${id}`);
    try {
      const detail = await this.api('GET', `/v1/schedules/${encodeURIComponent(scheduleId)}?next=5&runs=10`);
      const { schedule } = detail;
      this.shown = schedule.schedule_id;
      const name = schedule.name ?? schedule.schedule_id;
      $('schedule-detail-heading').textContent = `Schedule ${name}`;
      $('schedule-detail-facts').textContent =
        `${schedule.schedule_id} · ${schedule.workflow_id} · ${scheduleTiming(
          schedule,
        )} · missed firings: ${schedule.missed_policy}${schedule.paused ? ' · paused' : ''}`;
      const next = detail.next_fire_times.map((time) => {
        const item = document.createElement('li');
        item.className = 'mono';
        item.textContent = time;
        return item;
      });
      if (next.length === 0) {
        const none = document.createElement('li');
        none.className = 'hint';
        none.textContent = schedule.paused ? 'none while paused' : 'none';
        next.push(none);
      }
      $('schedule-next').replaceChildren(...next);
      $('schedule-runs').replaceChildren(...detail.last_runs.map((run) => this.runRow(run)));
      this.detail.hidden = false;
      if (focus) $('schedule-detail-heading').focus();
    } catch (error) {
      this.onNotice(`The schedule could not be shown: ${error.message}`);
    }
  }

  hideDetail() {
    this.shown = undefined;
    if (this.detail) this.detail.hidden = true;
  }

  runRow(run) {
    const row = document.createElement('tr');
    row.dataset.fireAt = run.fire_at;
    const task = run.trace_id
      ? button(run.trace_id.slice(0, 12), `Open task ${run.trace_id}`, () => this.onOpenTask(run.trace_id))
      : (run.error?.code ?? '–');
    row.append(
      cell(run.fire_at, 'mono'),
      cell(run.kind),
      cell(run.state),
      cell(run.status ?? '–', 'status'),
      cell(task),
    );
    return row;
  }

  /** Swaps the row's actions for a confirm step; Escape or Keep puts them back. */
  confirmDelete(actions, path, name) {
    const kept = [...actions.childNodes];
    const onKey = (event) => {
      if (event.key === 'Escape') restore();
    };
    const restore = () => {
      actions.removeEventListener('keydown', onKey);
      actions.replaceChildren(...kept);
      actions.querySelector('button:last-of-type')?.focus();
    };
    const yes = button(
      'Confirm delete',
      `Confirm delete of schedule ${name}`,
      () => void this.remove(path, name),
    );
    const no = button('Keep', `Keep schedule ${name}`, restore);
    actions.replaceChildren(yes, ' ', no);
    actions.addEventListener('keydown', onKey);
    yes.focus();
  }

  async remove(path, name) {
    try {
      await this.api('DELETE', path);
      this.onNotice(`Schedule ${name} deleted.`);
      await this.load();
    } catch (error) {
      this.onNotice(`The schedule could not be deleted: ${error.message}`);
    }
  }

  async act(path, done) {
    try {
      await this.api('POST', path);
      this.onNotice(done);
      await this.load();
    } catch (error) {
      this.onNotice(`The schedule could not be changed: ${error.message}`);
    }
  }

  async runNow(path, name) {
    try {
      const reply = await this.api('POST', `${path}/run`, {});
      this.onNotice(`Schedule ${name} fired: task ${reply.trace_id}.`);
      this.onOpenTask(reply.trace_id);
      if (this.shown !== undefined) await this.show(this.shown);
    } catch (error) {
      this.onNotice(`The schedule could not be run: ${error.message}`);
    }
  }
}
