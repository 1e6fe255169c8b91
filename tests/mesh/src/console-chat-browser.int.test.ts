/**
 * The console's chat on threads in a real browser (Debian's chromium, headless, driven by playwright-core)
 * against a real mesh: a conversation of three turns in one thread — a tool call, a tool call that waits
 * for approval and is approved from the keyboard, and a question the model can answer only from the
 * thread's history —, the transcript showing each turn with its tool calls once. The screenshot lands in
 * tests/mesh/.artifacts/. Skipped (with a warning) against a gateway without the threads API.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, storeModelKey } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';
import {
  ARTIFACTS,
  FailedRequests,
  HAVE_CHROMIUM,
  launchConsoleBrowser,
  submitAndFollow,
} from './console-chromium.js';

const POLL = { timeout: 20_000 };
const FOUNDED = 'ByteDance was founded in 2012.';
const PAID = 'The invoice is paid.';

interface ChatBody {
  messages?: { role: string; content?: unknown }[];
}
const messagesOf = (body: unknown) => (body as ChatBody).messages ?? [];
const textOf = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content ?? ''));

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;
let context: BrowserContext;
let page: Page;
let profile: string;
const pageProblems: string[] = [];

describe.skipIf(!HAVE_CHROMIUM)('the console chat on threads in headless chromium', () => {
  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        {
          method: 'GET',
          path: '/lookup',
          reply: { status: 200, body: { name: 'ByteDance', founded: 2012 } },
        },
        { method: 'GET', path: '/pay', reply: { status: 200, body: { paid: true } } },
      ],
    });
    model = await startScriptedModel({
      respond: (request) => {
        const messages = messagesOf(request.body);
        const users = messages.filter((message) => message.role === 'user');
        const asked = textOf(users.at(-1)?.content);
        if (messages.at(-1)?.role === 'tool') return { content: asked.includes('pay') ? PAID : FOUNDED };
        if (asked.includes('founded')) {
          return { toolCalls: [{ id: 'call_lookup', name: 'lookup', arguments: { keyword: 'ByteDance' } }] };
        }
        if (asked.includes('pay')) {
          return { toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { amount: 1200 } }] };
        }
        // Only the thread's history tells the model how many questions came before.
        return { content: `This conversation has ${users.length} questions.` };
      },
    });
    mesh = await startMesh();
    await storeModelKey(mesh);
    await registerQueryTool(mesh, {
      name: 'lookup',
      description: 'looks a company up',
      url: `${api.url}/lookup`,
      parameter: 'keyword',
      type: 'string',
    });
    await registerQueryTool(mesh, {
      name: 'pay',
      description: 'pays an amount',
      url: `${api.url}/pay`,
      parameter: 'amount',
      type: 'number',
    });
    await admin(mesh, 'POST', '/agents', {
      workflow_id: 'chat_agent',
      name: 'Chat',
      model: scriptedModel(model.baseUrl),
      tools: ['lookup', 'pay'],
      tool_approvals: {
        pay: { when: [{ arg: 'amount', op: 'gt', value: 1000 }], reason: 'a payment above 1000' },
      },
    });

    ({ context, page, profile } = await launchConsoleBrowser(pageProblems, {
      viewportHeight: 1000,
      failedRequests: FailedRequests.NONE,
    }));
  }, 240_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await mesh?.stop();
    await model?.stop();
    await api?.stop();
  });

  /** Posts `text` to the open thread from the keyboard and waits for the task panel to follow its task. */
  async function post(text: string): Promise<void> {
    const message = page.getByLabel('Chat message', { exact: true });
    await message.fill(text);
    await submitAndFollow(page, () => message.press('Control+Enter'));
  }

  it('when a user holds a three-turn conversation in a thread — a tool call, an approved tool call, a question about the history — the transcript shows each turn once, with its tool calls and results', async () => {
    await page.goto(`${mesh.gatewayUrl}/console`);
    await page.getByLabel('API key', { exact: true }).fill(mesh.apiKey);
    await page.getByRole('button', { name: 'Use key' }).click();
    const agent = page.getByLabel('Agent', { exact: true });
    await expect.poll(() => agent.locator('option').allTextContents(), POLL).toContain('Chat (chat_agent)');
    await agent.selectOption('chat_agent');
    const user = page.getByLabel('Submit as user', { exact: true });
    await user.fill('u1');
    await user.press('Tab');

    await page.getByRole('button', { name: 'Load threads' }).click();
    await page.getByLabel('New thread title', { exact: true }).fill('Company chat');
    await page.getByRole('button', { name: 'New thread' }).click();
    await expect
      .poll(() => page.locator('#thread-title').textContent(), POLL)
      .toMatch(/^Thread Company chat/);
    await expect.poll(() => page.locator('#threads > li').count(), POLL).toBe(1);

    // Turn 1: a tool call.
    await post('When was ByteDance founded?');
    await page.locator('#task-status', { hasText: /^done$/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#answer').textContent()).toBe(FOUNDED);
    const transcript = page.locator('#thread-transcript > li');
    await expect.poll(() => transcript.count(), POLL).toBe(3);

    // Turn 2: a tool call that waits for approval, approved from the keyboard where the turn streams.
    await post('Please pay the invoice');
    const approve = page.getByRole('button', { name: 'Approve pay call call_pay' });
    await approve.waitFor({ timeout: 30_000 });
    expect(await page.locator('#task-status').textContent()).toBe('waiting_approval');
    await page.screenshot({ path: join(ARTIFACTS, 'console-chat-approval.png'), fullPage: true });
    await approve.focus();
    await page.keyboard.press('Enter');
    await page.locator('#task-status', { hasText: /^done$/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#answer').textContent()).toBe(PAID);
    await expect.poll(() => transcript.count(), POLL).toBe(6);

    // Turn 3: only the history answers it.
    await post('What did we talk about?');
    await page.locator('#task-status', { hasText: /^done$/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#answer').textContent()).toBe('This conversation has 3 questions.');
    await expect.poll(() => transcript.count(), POLL).toBe(8);

    const items = await transcript.allTextContents();
    expect(items[0]).toBe('You: When was ByteDance founded?');
    expect(items[1]).toMatch(/^Tool lookup.*"keyword": "ByteDance".*Result.*2012/s);
    expect(items[2]).toBe(`Agent: ${FOUNDED}`);
    expect(items[3]).toBe('You: Please pay the invoice');
    expect(items[4]).toMatch(/^Tool pay.*"amount": 1200.*Result.*paid/s);
    expect(items[5]).toBe(`Agent: ${PAID}`);
    expect(items[6]).toBe('You: What did we talk about?');
    expect(items[7]).toBe('Agent: This conversation has 3 questions.');
    // The upstream was paid once, after the approval.
    expect(api.requests.filter((request) => request.path === '/pay')).toHaveLength(1);
    await page.locator('#chat').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'console-chat.png'), fullPage: true });
    expect(pageProblems).toEqual([]);
  });
});
