/**
 * The benchmark's floor: the same one-tool task as a plain in-process loop — model call, tool call,
 * model call — over undici with no NATS, no services, no events. What the mesh adds is measured
 * against this.
 */
import { request } from 'undici';

interface ToolCallReply {
  choices: {
    message: {
      content: string | null;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    };
  }[];
}

export async function runPlainTask(modelBaseUrl: string, toolUrl: string, userText: string): Promise<string> {
  const messages: unknown[] = [{ role: 'user', content: userText }];
  for (let step = 0; step < 4; step++) {
    const response = await request(`${modelBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench', messages, stream: false }),
    });
    const reply = (await response.body.json()) as ToolCallReply;
    const message = reply.choices[0]!.message;
    messages.push({ role: 'assistant', ...message });
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      const args = JSON.parse(call.function.arguments) as Record<string, string>;
      const tool = await request(`${toolUrl}?${new URLSearchParams(args).toString()}`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: await tool.body.text() });
    }
  }
  throw new Error('plain loop did not finish in 4 steps');
}
