/**
 * The console's management panels in a real browser (Debian's chromium, headless, driven by playwright-core)
 * against a real mesh: credentials (names listed per scope, values written only and never put back in the
 * page), schedules (list, show with next fire times and last runs, pause and resume, run now, delete with
 * a confirm step) and a run pinned to an older agent version from the Version box, which the task panel
 * reports from the task's first event. An account's API key is told credentials need an admin key.
 * Screenshots land in tests/mesh/.artifacts/.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';
import {
  ARTIFACTS,
  CHROMIUM,
  FailedRequests,
  HAVE_CHROMIUM,
  launchConsoleBrowser,
  submitAndFollow,
} from './console-chromium.js';

/** What the page shows after a fetch of its own can come seconds late on a loaded machine. */
const POLL = { timeout: 15_000 };
if (!HAVE_CHROMIUM) {
  console.warn(`console management test skipped: no chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);
}
const AGENT = 'pinned_agent';
const USER = 'cred-user';
const ACCOUNT_CANARY = 'canary-account-secret-5f1c9e';
const USER_CANARY = 'canary-user-secret-8d24a7';

let mesh: Mesh;
let model: ScriptedModel;
let context: BrowserContext;
let page: Page;
let profile: string;
/** What the page reported: console errors, failed requests, CSP violations. */
const pageProblems: string[] = [];

/** A call as an admin key acting for the account the console acts for (`/v1/admin` when `admin`). */
async function call(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${mesh.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': MESH_ACCOUNT,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

async function json(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await call(method, path, body);
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

const names = async (path: string) => ((await json('GET', path)) as { names: string[] }).names.sort();

/** The texts of a list's items. */
const listed = (id: string) => page.locator(`#${id} li`).allTextContents();

/** Submits a task from the page (`submit`) and waits for it to be done; its id. */
async function nextTaskDone(submit: () => Promise<void>): Promise<string> {
  const traceId = await submitAndFollow(page, submit);
  await page.locator('#task-status', { hasText: /^done$/ }).waitFor({ timeout: 30_000 });
  return traceId;
}

/** The accessible name of what has the keyboard focus (its aria-label, else its text). */
const focused = async () =>
  (await page.evaluate(
    `(() => { const at = document.activeElement; return at?.getAttribute('aria-label') ?? at?.textContent; })()`,
  )) as string | undefined;

describe.skipIf(!HAVE_CHROMIUM)('the console management panels in headless chromium', () => {
  beforeAll(async () => {
    // The model answers with the system prompt it was given: the answer says which version ran.
    model = await startScriptedModel({
      respond: (request) => {
        const messages = (request.body as { messages?: { role: string; content: string }[] }).messages;
        return { content: `Ran with: ${messages?.find((m) => m.role === 'system')?.content ?? 'none'}` };
      },
    });
    mesh = await startMesh();
    for (const prompt of ['Prompt one.', 'Prompt two.']) {
      await json('PUT', `/v1/admin/agents/${AGENT}`, {
        workflow_id: AGENT,
        name: 'Pinned',
        system_prompt: prompt,
        model: { model_name: 'scripted', base_url: model.baseUrl },
      });
    }

    ({ context, page, profile } = await launchConsoleBrowser(pageProblems, {
      viewportHeight: 1000,
      failedRequests: FailedRequests.BUT_CLOSED_EVENT_STREAMS,
    }));

    await page.goto(`${mesh.gatewayUrl}/console`);
    await page.getByLabel('API key', { exact: true }).fill(mesh.adminKey);
    await page.getByRole('button', { name: 'Use key' }).click();
    const account = page.getByLabel('Account', { exact: true });
    await account.waitFor({ state: 'visible', timeout: 15_000 });
    await account.fill(MESH_ACCOUNT);
    await page.getByRole('button', { name: 'Act for account' }).click();
    await page.locator(`#agent option[value="${AGENT}"]`).waitFor({ state: 'attached', timeout: 15_000 });
  }, 240_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await mesh?.stop();
    await model?.stop();
  });

  it('when an admin key stores an account credential and a user credential from the keyboard, each name is listed under its scope, no value is ever in the page, and Delete removes one', async () => {
    const problemsBefore = pageProblems.length;
    const user = page.getByLabel('Submit as user', { exact: true });
    await user.fill(USER);
    await user.press('Tab');
    await expect
      .poll(() => page.locator('#user-credentials-heading').textContent(), POLL)
      .toBe(`User ${USER}`);
    await expect.poll(() => listed('account-credentials'), POLL).toEqual(['none']);

    // The account-wide one, typed and sent with Enter.
    await page.getByLabel('For', { exact: true }).selectOption('account');
    await page.getByLabel('Credential name', { exact: true }).fill('SHARED_KEY');
    const value = page.getByLabel('Credential value', { exact: true });
    await value.fill(ACCOUNT_CANARY);
    await value.press('Enter');
    await expect
      .poll(() => page.locator('#notice').textContent(), POLL)
      .toBe('Account credential SHARED_KEY stored.');
    expect(await value.inputValue()).toBe('');

    // The user's own one.
    await page.getByLabel('For', { exact: true }).selectOption('user');
    await page.getByLabel('Credential name', { exact: true }).fill('OWN_KEY');
    await value.fill(USER_CANARY);
    await page.getByRole('button', { name: 'Store credential' }).click();
    await expect
      .poll(() => page.locator('#notice').textContent(), POLL)
      .toBe(`Credential OWN_KEY stored for user ${USER}.`);
    expect(await value.inputValue()).toBe('');

    await expect.poll(() => listed('account-credentials'), POLL).toEqual(['SHARED_KEY Delete']);
    await expect.poll(() => listed('user-credentials'), POLL).toEqual(['OWN_KEY Delete']);
    expect(await names(`/v1/admin/accounts/${MESH_ACCOUNT}/credentials`)).toEqual(['SHARED_KEY']);
    expect(await names(`/v1/admin/accounts/${MESH_ACCOUNT}/users/${USER}/credentials`)).toEqual(['OWN_KEY']);

    // Neither value is anywhere in the page: not in its HTML, nor in any field's current value.
    const html = await page.content();
    const fieldValues = await page
      .locator('input, textarea')
      .evaluateAll((fields) =>
        fields.map((field) => (field as unknown as { value: string }).value).join('\n'),
      );
    for (const canary of [ACCOUNT_CANARY, USER_CANARY]) {
      expect(html).not.toContain(canary);
      expect(fieldValues).not.toContain(canary);
    }
    await page.screenshot({ path: join(ARTIFACTS, 'console-credentials.png'), fullPage: true });

    // Delete the account's one from the keyboard.
    await page.getByRole('button', { name: 'Delete account credential SHARED_KEY' }).focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#notice').textContent(), POLL)
      .toBe('Account credential SHARED_KEY deleted.');
    await expect.poll(() => listed('account-credentials'), POLL).toEqual(['none']);
    expect(await listed('user-credentials')).toEqual(['OWN_KEY Delete']);
    expect(
      await page.getByRole('button', { name: `Delete credential OWN_KEY of user ${USER}` }).count(),
    ).toBe(1);
    expect(await names(`/v1/admin/accounts/${MESH_ACCOUNT}/credentials`)).toEqual([]);
    expect(await names(`/v1/admin/accounts/${MESH_ACCOUNT}/users/${USER}/credentials`)).toEqual(['OWN_KEY']);
    expect(pageProblems.slice(problemsBefore)).toEqual([]);
  });

  it('when a run is pinned to version 1 in the Version box after the agent moved to 2, the task runs version 1 and the panel and status say so; without a pin it runs 2', async () => {
    const problemsBefore = pageProblems.length;
    await page.getByLabel('Agent', { exact: true }).selectOption(AGENT);
    expect(await page.getByLabel('Version', { exact: true }).getAttribute('placeholder')).toBe('current: 2');

    const run = async (version: string) => {
      await page.getByLabel('Version', { exact: true }).fill(version);
      await page.getByLabel('Message', { exact: true }).fill(`Which version? (${version || 'current'})`);
      return nextTaskDone(() => page.getByRole('button', { name: 'Send' }).click());
    };

    const pinned = await run('1');
    expect(await page.locator('#answer').textContent()).toBe('Ran with: Prompt one.');
    expect(await page.locator('#task-version').textContent()).toBe(` · ${AGENT} version 1`);
    expect((await json('GET', `/v1/tasks/${pinned}`)).agent_version).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'console-pinned-run.png'), fullPage: true });

    const current = await run('');
    expect(current).not.toBe(pinned);
    expect(await page.locator('#answer').textContent()).toBe('Ran with: Prompt two.');
    expect(await page.locator('#task-version').textContent()).toBe(` · ${AGENT} version 2`);
    expect((await json('GET', `/v1/tasks/${current}`)).agent_version).toBe(2);
    expect(pageProblems.slice(problemsBefore)).toEqual([]);
  });

  it('when a schedule is listed, Show gives its next fire times and last runs; pause and resume, run now and a confirmed delete from the keyboard reach the API', async () => {
    const problemsBefore = pageProblems.length;
    const created = await json('POST', '/v1/schedules', {
      name: 'weekday-report',
      cron: '0 8 * * 1-5',
      timezone: 'Europe/Berlin',
      workflow_id: AGENT,
      input: { user_id: USER, messages: [{ role: 'user', content: 'Scheduled report.' }] },
    });
    const id = created.schedule_id as string;
    const row = page.locator(`#schedules tr[data-schedule-id="${id}"]`);
    await page.getByRole('button', { name: 'Reload schedules' }).click();
    await expect.poll(() => row.locator('td').nth(2).textContent(), POLL).toBe('0 8 * * 1-5 (Europe/Berlin)');

    // Show: the next five fire times as the API computes them, and no run yet.
    await page.getByRole('button', { name: 'Show schedule weekday-report' }).click();
    await expect.poll(focused, POLL).toBe('Schedule weekday-report');
    const detail = (await json('GET', `/v1/schedules/${id}`)) as { next_fire_times: string[] };
    expect(detail.next_fire_times).toHaveLength(5);
    expect(await listed('schedule-next')).toEqual(detail.next_fire_times);
    expect(await page.locator('#schedule-runs tr').count()).toBe(0);

    // Pause, then resume.
    await page.getByRole('button', { name: 'Pause schedule weekday-report' }).click();
    await expect.poll(() => row.locator('td').nth(3).textContent(), POLL).toBe('paused');
    await expect.poll(() => listed('schedule-next'), POLL).toEqual(['none while paused']);
    expect((await json('GET', `/v1/schedules/${id}`)) as { schedule: { paused: boolean } }).toMatchObject({
      schedule: { paused: true },
    });
    await page.getByRole('button', { name: 'Resume schedule weekday-report' }).click();
    await expect.poll(() => listed('schedule-next').then((items) => items.length), POLL).toBe(5);
    expect((await json('GET', `/v1/schedules/${id}`)) as { schedule: { paused: boolean } }).toMatchObject({
      schedule: { paused: false },
    });

    // Run now: the task opens in the task panel and runs to done; the last runs list it with its status.
    const traceId = await nextTaskDone(() =>
      page.getByRole('button', { name: 'Run schedule weekday-report now' }).click(),
    );
    expect(await page.locator('#answer').textContent()).toBe('Ran with: Prompt two.');
    // The status record may say done a moment after the event stream did: Show reads it again each poll.
    const runs = async () => {
      await page.getByRole('button', { name: 'Show schedule weekday-report' }).click();
      return page
        .locator('#schedule-runs tr')
        .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    };
    await expect
      .poll(runs, POLL)
      .toEqual([[expect.any(String), 'manual', 'submitted', 'done', traceId.slice(0, 12)]]);
    expect(await page.getByRole('button', { name: `Open task ${traceId}` }).count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'console-schedule-detail.png'), fullPage: true });

    // Delete from the keyboard: Escape backs out of the confirm step, Enter twice deletes.
    const remove = page.getByRole('button', { name: 'Delete schedule weekday-report' });
    await remove.focus();
    await page.keyboard.press('Enter');
    await expect.poll(focused, POLL).toBe('Confirm delete of schedule weekday-report');
    await page.keyboard.press('Escape');
    expect(await focused()).toBe('Delete schedule weekday-report');
    expect((await call('GET', `/v1/schedules/${id}`)).status).toBe(200);
    await page.keyboard.press('Enter');
    await expect.poll(focused, POLL).toBe('Confirm delete of schedule weekday-report');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#notice').textContent(), POLL)
      .toBe('Schedule weekday-report deleted.');
    await expect.poll(() => row.count(), POLL).toBe(0);
    expect(await page.locator('#schedule-detail').isHidden()).toBe(true);
    expect((await call('GET', `/v1/schedules/${id}`)).status).toBe(404);
    expect(pageProblems.slice(problemsBefore)).toEqual([]);
  });

  it("when the key is an account's API key, the credentials panel says they need an admin key and makes no management call", async () => {
    const problemsBefore = pageProblems.length;
    const adminCalls: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.startsWith('/v1/admin')) adminCalls.push(request.url());
    });
    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('API key', { exact: true }).fill(mesh.apiKey);
    await page.getByRole('button', { name: 'Use key' }).click();
    await expect
      .poll(() => page.locator('#credentials-note').textContent(), POLL)
      .toContain('use an admin key acting for the account');
    expect(await page.locator('#credentials-body').isHidden()).toBe(true);
    expect(await listed('account-credentials')).toEqual([]);
    expect(adminCalls).toEqual([]);
    expect(pageProblems.slice(problemsBefore)).toEqual([]);
  });
});
