import { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { EventPrinter, type TextSink } from './event-printer.js';
import { printTailEvent } from './tail-printer.js';

const progressEvent = TaskEvent.parse({
  trace_id: '0af7651916cd43dd8448eb211c80319c',
  seq: 3,
  ts: '2026-11-24T00:00:00.000Z',
  attempt: 1,
  type: 'tool_progress',
  data: { call_id: 'c1', tool: 'mcp_report', progress: 3, total: 10, message: 'pages read' },
});

class TextBuffer implements TextSink {
  text = '';
  write(chunk: string): void {
    this.text += chunk;
  }
}

describe('a tool reporting progress while it runs', () => {
  it('is a [tool] note on stderr with progress/total and message, and stdout keeps only the answer', () => {
    const streams = { stdout: new TextBuffer(), stderr: new TextBuffer() };
    new EventPrinter(streams, { json: false, sharedTerminal: false }).print(progressEvent);
    expect(streams.stderr.text).toBe('[tool] mcp_report 3/10 pages read\n');
    expect(streams.stdout.text).toBe('');
  });

  it('is one line of agentmesh tail naming its task', () => {
    const stdout = new TextBuffer();
    printTailEvent(progressEvent, false, stdout);
    expect(stdout.text).toBe(`${progressEvent.trace_id} 3 tool_progress mcp_report 3/10 pages read\n`);
  });
});
