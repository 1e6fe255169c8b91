import { describe, expect, it } from 'vitest';
import { EventType } from './events.js';
import { isSseEventNameOf, SseEventName, sseEventName } from './sse-event-names.js';

describe('SSE event names', () => {
  it("when the mesh's error event goes over SSE, its name is task_error, not EventSource's own error", () => {
    expect(sseEventName(EventType.ERROR)).toBe('task_error');
    expect(Object.values(SseEventName)).not.toContain('error');
  });

  it('when any other event goes over SSE, its name is its type', () => {
    for (const type of Object.values(EventType).filter((type) => type !== EventType.ERROR)) {
      expect(sseEventName(type)).toBe(type);
    }
  });

  it('when a reader checks a name, both task_error and the older error fit an error event, and nothing else does', () => {
    expect(isSseEventNameOf('task_error', EventType.ERROR)).toBe(true);
    expect(isSseEventNameOf('error', EventType.ERROR)).toBe(true);
    expect(isSseEventNameOf('done', EventType.ERROR)).toBe(false);
    expect(isSseEventNameOf('task_error', EventType.DONE)).toBe(false);
    expect(isSseEventNameOf('message', EventType.MESSAGE_CHUNK)).toBe(false);
  });
});
