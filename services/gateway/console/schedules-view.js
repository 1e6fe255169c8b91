/* global document */
// The account's scheduled runs: one row per schedule (GET /v1/schedules) with its agent, its cron and zone
// or interval, its next fire time, and Pause / Resume and Run now buttons (POST /v1/schedules/{id}/pause,
// /resume, /run). A run-now opens its task in the task view. Creating and deleting schedules is the CLI's
// or the API's (agentmesh schedules create); this view only looks after the ones there are.

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
  /** `body` is the table's <tbody>; `api(method, path, body)` calls the gateway with the key. */
  constructor(body, { api, onNotice, onOpenTask }) {
    this.body = body;
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
    const actions = document.createElement('span');
    actions.append(toggle, ' ', run);
    row.append(
      cell(name),
      cell(schedule.workflow_id),
      cell(scheduleTiming(schedule), 'mono'),
      cell(schedule.paused ? 'paused' : (schedule.next_fire_at ?? '–')),
      cell(actions),
    );
    return row;
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
    } catch (error) {
      this.onNotice(`The schedule could not be run: ${error.message}`);
    }
  }
}
