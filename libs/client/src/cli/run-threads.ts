/**
 * `agentmesh threads list|show|create|delete`: the caller's account's threads, through {@link MeshClient}
 * (an API key acts for its own account; an admin key for the one named with --account). Human lines on
 * stdout, or the gateway's answer as JSON with `--json`; `show` prints the thread's messages, tool calls
 * and results in order.
 */
import type { CreateThreadRequest, ThreadReply } from '@agentmesh/protocol';
import type { MeshClient } from '../mesh-client.js';
import type { CliStreams } from './event-printer.js';
import { UsageError } from './cli-args.js';
import type { ManagementAction } from './management-args.js';

export async function runThreadAction(
  command: ManagementAction,
  client: MeshClient,
  context: CliStreams & { signal?: AbortSignal },
): Promise<void> {
  const { args, values, json } = command;
  const call = context.signal === undefined ? {} : { signal: context.signal };
  const out = (text: string): unknown => context.stdout.write(`${text}\n`);
  const string = (option: string): string | undefined => {
    const value = values[option];
    return typeof value === 'string' ? value : undefined;
  };
  const threadId = args.thread_id as string;
  switch (command.action) {
    case 'threads list': {
      const limit = string('limit');
      if (limit !== undefined && !/^\d+$/.test(limit)) throw new UsageError('--limit must be a number');
      const before = string('before');
      const page = await client.listThreads({
        ...call,
        ...(limit === undefined ? {} : { limit: Number(limit) }),
        ...(before === undefined ? {} : { before }),
      });
      if (json) out(JSON.stringify(page));
      else {
        for (const thread of page.threads) {
          out(
            `${thread.thread_id}\t${thread.status}\t${thread.created_at}\t${JSON.stringify(thread.metadata)}`,
          );
        }
        if (page.next_before !== undefined) context.stderr.write(`more: --before ${page.next_before}\n`);
      }
      return;
    }
    case 'threads show': {
      const thread = await client.thread(threadId, call);
      out(json ? JSON.stringify(thread) : threadText(thread));
      return;
    }
    case 'threads create': {
      const request: CreateThreadRequest = {};
      const id = string('id');
      if (id !== undefined) request.thread_id = id;
      const strategy = string('strategy');
      if (strategy !== undefined) request.strategy = strategy as CreateThreadRequest['strategy'] & string;
      const metadata = string('metadata');
      if (metadata !== undefined) {
        try {
          request.metadata = JSON.parse(metadata) as Record<string, unknown>;
        } catch {
          throw new UsageError('--metadata must be a JSON object');
        }
      }
      const maxTokens = string('max-history-tokens');
      const policy = string('compaction');
      if (policy !== undefined && maxTokens === undefined) {
        throw new UsageError('--compaction goes with --max-history-tokens <n>');
      }
      if (maxTokens !== undefined) {
        if (!/^\d+$/.test(maxTokens)) throw new UsageError('--max-history-tokens must be a number');
        request.compaction = {
          max_history_tokens: Number(maxTokens),
          policy: policy === 'summarise' ? 'summarise' : 'cut',
          keep_turns: 4,
        };
      }
      const maxAge = string('max-age-seconds');
      const maxTurns = string('max-turns');
      for (const [flag, value] of [
        ['--max-age-seconds', maxAge],
        ['--max-turns', maxTurns],
      ] as const) {
        if (value !== undefined && !/^\d+$/.test(value)) throw new UsageError(`${flag} must be a number`);
      }
      if (maxAge !== undefined || maxTurns !== undefined) {
        // The gateway checks the bounds (400 naming the field).
        request.retention = {
          ...(maxAge === undefined ? {} : { max_age_seconds: Number(maxAge) }),
          ...(maxTurns === undefined ? {} : { max_turns: Number(maxTurns) }),
        };
      }
      const created = await client.createThread(request, call);
      out(json ? JSON.stringify(created) : created.thread_id);
      return;
    }
    case 'threads delete':
      await client.deleteThread(threadId, call);
      if (!json) out(`deleted thread ${threadId}`);
      return;
    default:
      throw new UsageError(`unknown command ${command.action}`);
  }
}

/** The thread as a transcript: one line per message, tool calls and results included. */
function threadText(thread: ThreadReply): string {
  const lines = [
    `thread ${thread.thread_id} (${thread.status}${thread.active_trace_id ? ` ${thread.active_trace_id}` : ''})`,
  ];
  for (const { seq, entry } of thread.entries) {
    if (entry.type === 'compaction') {
      lines.push(`  [${seq}] compaction (${entry.method}) from ${entry.keep_from_seq}`);
      continue;
    }
    lines.push(`  [${seq}] turn ${entry.trace_id}${entry.interrupted ? ' (interrupted)' : ''}`);
    for (const message of entry.messages) {
      const text =
        typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
      const calls =
        message.role === 'assistant' && message.tool_calls?.length
          ? ` → ${message.tool_calls.map((c) => `${c.function.name}(${c.function.arguments})`).join(', ')}`
          : '';
      lines.push(`    ${message.role}: ${text}${calls}`);
    }
  }
  return lines.join('\n');
}
