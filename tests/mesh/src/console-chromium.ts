/**
 * Headless chromium for the console's browser tests: Debian's chromium on a throw-away profile, and every
 * problem the page meets (console errors, 4xx/5xx answers, page errors, failed requests) collected for a
 * test to assert there were none.
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
/** Where the tests' screenshots go. */
export const ARTIFACTS = fileURLToPath(new URL('../.artifacts/', import.meta.url));

/** Which failed requests count as a page problem. */
export const FailedRequests = {
  ALL: 'all',
  /** An EventSource the console closes after the terminal event is aborted on purpose. */
  BUT_CLOSED_EVENT_STREAMS: 'but-closed-event-streams',
  NONE: 'none',
} as const;
export type FailedRequests = (typeof FailedRequests)[keyof typeof FailedRequests];

export interface ConsoleBrowser {
  context: BrowserContext;
  page: Page;
  /** The profile directory, for the test to remove after closing the context. */
  profile: string;
}

export async function launchConsoleBrowser(
  problems: string[],
  options: { viewportHeight: number; failedRequests: FailedRequests },
): Promise<ConsoleBrowser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'agentmesh-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: options.viewportHeight },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  if (options.failedRequests !== FailedRequests.NONE) {
    page.on('requestfailed', (request) => {
      if (options.failedRequests === FailedRequests.ALL || !request.url().includes('/events?'))
        problems.push(`request failed: ${request.url()}`);
    });
  }
  return { context, page, profile };
}

/**
 * Does what submits a task from the page (`submit`: a click, a key) and waits until the task panel follows
 * a task other than the one it showed before; answers the new task's trace id. Until the submit's reply
 * arrives the panel still shows the earlier task, whose `done` must not be taken for the new one's.
 */
export async function submitAndFollow(page: Page, submit: () => Promise<void>): Promise<string> {
  const before = await page.locator('#task-id').textContent();
  await submit();
  await expect.poll(() => page.locator('#task-id').textContent(), { timeout: 15_000 }).not.toBe(before);
  return (await page.locator('#task-id').textContent()) ?? '';
}
