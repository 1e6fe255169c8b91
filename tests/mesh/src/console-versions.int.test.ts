/**
 * The console's agent versions panel (services/gateway/console/versions-view.js) in a real browser
 * (Debian's chromium, headless, driven by playwright-core) against a real mesh: an agent written three
 * times is listed with its three versions, versions 1 and 3 are compared, and a rollback to version 2
 * made from the keyboard (with its confirm step) is what the API then answers. An account's API key is
 * told the panel needs an admin key, and asks for nothing. Screenshots land in tests/mesh/.artifacts/.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';
import {
  ARTIFACTS,
  CHROMIUM,
  FailedRequests,
  HAVE_CHROMIUM,
  launchConsoleBrowser,
} from './console-chromium.js';

/** What the page shows after a fetch of its own can come seconds late on a loaded machine. */
const POLL = { timeout: 15_000 };
if (!HAVE_CHROMIUM) {
  console.warn(`console versions test skipped: no chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);
}
const AGENT = 'versioned_agent';

let mesh: Mesh;
let context: BrowserContext;
let page: Page;
let profile: string;
/** What the page reported: console errors, failed requests, CSP violations. */
const pageProblems: string[] = [];

/** A management call for the account the console acts for, as an admin key naming it. */
async function manage(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': MESH_ACCOUNT,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

const definition = (systemPrompt: string, model: Record<string, unknown>) => ({
  workflow_id: AGENT,
  name: 'Versioned',
  system_prompt: systemPrompt,
  model: { model_name: 'scripted', base_url: 'http://127.0.0.1:9/v1', ...model },
});

describe.skipIf(!HAVE_CHROMIUM)('the console versions panel in headless chromium', () => {
  beforeAll(async () => {
    mesh = await startMesh();
    // Three writes, three versions of the account's own agent.
    await manage('PUT', `/agents/${AGENT}`, definition('First prompt.', { temperature: 0.2 }));
    await manage('PUT', `/agents/${AGENT}`, definition('Second prompt.', { temperature: 0.2 }));
    await manage('PUT', `/agents/${AGENT}`, definition('Third prompt.', { max_tokens: 256 }));

    ({ context, page, profile } = await launchConsoleBrowser(pageProblems, {
      viewportHeight: 1000,
      failedRequests: FailedRequests.ALL,
    }));
  }, 240_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await mesh?.stop();
  });

  it('when an admin key acting for the account picks an agent written three times, the panel lists three versions, diffs 1 and 3, and a confirmed rollback to 2 from the keyboard makes 2 current in the API', async () => {
    await page.goto(`${mesh.gatewayUrl}/console`);
    await page.getByLabel('API key', { exact: true }).fill(mesh.adminKey);
    await page.getByRole('button', { name: 'Use key' }).click();
    const account = page.getByLabel('Account', { exact: true });
    await account.waitFor({ state: 'visible', timeout: 15_000 });
    await account.fill(MESH_ACCOUNT);
    await page.getByRole('button', { name: 'Act for account' }).click();
    const agent = page.getByLabel('Agent', { exact: true });
    await expect
      .poll(() => agent.locator('option').allTextContents(), POLL)
      .toContain(`Versioned (${AGENT})`);
    await agent.selectOption(AGENT);

    const rows = page.locator('#version-rows tr');
    await expect
      .poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-version'))), POLL)
      .toEqual(['3', '2', '1']);
    const cells = async (version: number) =>
      page.locator(`#version-rows tr[data-version="${version}"] td`).allTextContents();
    const newest = await cells(3);
    expect(newest[1]).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(newest[2]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    expect(newest[3]).toBe('current');
    expect((await cells(1))[3]).toBe('Roll back');
    expect(await page.locator('#versions-note').textContent()).toBe(`Agent ${AGENT} runs version 3.`);

    // The differences between versions 1 and 3, as the diff API lists them.
    const from = page.getByLabel('From version', { exact: true });
    await from.selectOption('1');
    await page.getByLabel('To version', { exact: true }).selectOption('3');
    // The page re-reads its agents now and then, and the panel its versions: a re-read keeps the choice.
    await page.getByRole('button', { name: 'Reload versions' }).click();
    await expect
      .poll(
        () =>
          page.locator('#versions-table').evaluate((table) => table.parentElement?.getAttribute('aria-busy')),
        POLL,
      )
      .toBeNull();
    expect(await from.inputValue()).toBe('1');
    await page.getByRole('button', { name: 'Show differences' }).click();
    await expect
      .poll(() => page.locator('#diff-summary').textContent(), POLL)
      .toBe('3 differences between version 1 and version 3.');
    const diff = await page
      .locator('#diff-rows tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(diff).toEqual([
      ['/model/max_tokens', '+ added', '–', '256'],
      ['/model/temperature', '− removed', '0.2', '–'],
      ['/system_prompt', '~ changed', '"First prompt."', '"Third prompt."'],
    ]);

    // Roll back to version 2 from the keyboard: Escape first backs out of the confirm step.
    const rollBack = page.getByRole('button', { name: `Roll back ${AGENT} to version 2` });
    /** The accessible name of what has the keyboard focus (its aria-label, else its text). */
    const focused = async () =>
      (await page.evaluate(
        `(() => { const at = document.activeElement; return at?.getAttribute('aria-label') ?? at?.textContent; })()`,
      )) as string | undefined;
    await rollBack.focus();
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('button', { name: 'Roll back to version 2' });
    await expect.poll(focused, POLL).toBe('Roll back to version 2');
    await page.keyboard.press('Escape');
    expect(await confirm.isVisible()).toBe(false);
    expect(await focused()).toBe(`Roll back ${AGENT} to version 2`);
    expect((await manage('GET', `/agents/${AGENT}`)).version).toBe(3);

    await page.keyboard.press('Enter');
    await expect.poll(focused, POLL).toBe('Roll back to version 2');
    await page.screenshot({ path: join(ARTIFACTS, 'console-versions-confirm.png'), fullPage: true });
    await page.keyboard.press('Enter');

    await expect.poll(async () => (await cells(2))[3], POLL).toBe('current');
    expect((await cells(3))[3]).toBe('Roll back');
    expect(await page.locator('#notice').textContent()).toBe(`Agent ${AGENT} now runs version 2.`);
    expect((await manage('GET', `/agents/${AGENT}`)).version).toBe(2);
    expect((await manage('GET', `/agents/${AGENT}/versions`)).current).toBe(2);
    // The run form's Version box shows the new current version once the agents are read again.
    await expect
      .poll(() => page.getByLabel('Version', { exact: true }).getAttribute('placeholder'), POLL)
      .toBe('current: 2');
    await page.screenshot({ path: join(ARTIFACTS, 'console-versions.png'), fullPage: true });
    expect(pageProblems).toEqual([]);
  });

  it("when the key is an account's API key, the panel says versions need an admin key and makes no management call", async () => {
    const problemsBefore = pageProblems.length;
    const adminCalls: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.startsWith('/v1/admin')) adminCalls.push(request.url());
    });
    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('API key', { exact: true }).fill(mesh.apiKey);
    await page.getByRole('button', { name: 'Use key' }).click();
    const agent = page.getByLabel('Agent', { exact: true });
    await expect
      .poll(() => agent.locator('option').allTextContents(), POLL)
      .toContain(`Versioned (${AGENT})`);
    await agent.selectOption(AGENT);
    await expect
      .poll(() => page.locator('#versions-note').textContent(), POLL)
      .toContain('use an admin key acting for the account');
    expect(await page.locator('#versions-table').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: /^Roll back/ }).count()).toBe(0);
    expect(adminCalls).toEqual([]);
    expect(pageProblems.slice(problemsBefore)).toEqual([]);
  });
});
