import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fetchPacedTimings,
  PACED_ANSWER,
  PACED_ANSWER_TOKENS,
  pacedKeyOf,
  pacedUserMessage,
  startPacedServer,
  taskOverheads,
  type PacedServer,
} from './paced-workload.js';
import { medianOfPacedPasses, type PacedMeasures } from './paced-run.js';
import { runPlainTask } from './plain-loop.js';

describe('the paced workload’s arithmetic', () => {
  it('a task’s key travels in its user message and comes back out', () => {
    expect(pacedKeyOf(pacedUserMessage('12-3.45'))).toBe('12-3.45');
    expect(pacedKeyOf('one-tool #3')).toBeUndefined();
  });

  it('the overheads set the client’s times against the model’s and the tool’s own', () => {
    const overheads = taskOverheads(
      { submitAt: 1_000, firstChunkAt: 2_020, doneAt: 8_100 },
      {
        turns: [
          { requestAt: 1_030, firstByteAt: 1_430, endAt: 1_530 },
          { requestAt: 1_760, firstByteAt: 2_160, endAt: 8_060 },
        ],
        tool: { requestAt: 1_540, firstByteAt: 1_740, endAt: 1_740 },
        firstContentAt: 2_000,
      },
    );
    // Own time: 500 + 6300 + 200 = 7000; end to end 7100.
    // The 100 ms in phases: 30 to the model, 10 call → tool, 20 tool → model, 40 model end → done.
    expect(overheads).toEqual({
      ttftOverheadMs: 20,
      e2eOverheadMs: 100,
      submitToModelMs: 30,
      callToToolMs: 10,
      toolToModelMs: 20,
      modelToDoneMs: 40,
    });
  });

  it('a task the model never finished has no end-to-end overhead', () => {
    const overheads = taskOverheads(
      { submitAt: 0, firstChunkAt: undefined, doneAt: 50 },
      { turns: [{ requestAt: 10 }] },
    );
    expect(overheads).toEqual({
      ttftOverheadMs: undefined,
      e2eOverheadMs: undefined,
      submitToModelMs: 10,
      callToToolMs: undefined,
      toolToModelMs: undefined,
      modelToDoneMs: undefined,
    });
  });

  it('the median of paced passes counts a pass that never got back to idle as the worst', () => {
    const pass = (idle: number | null): PacedMeasures => ({
      workload: 'paced',
      client: 'SSE',
      in_flight: 100,
      tasks: 300,
      ttft_overhead_p50_ms: 1,
      ttft_overhead_p99_ms: 2,
      e2e_overhead_p50_ms: 3,
      e2e_overhead_p99_ms: 4,
      submit_to_model_p50_ms: 5,
      submit_to_model_p99_ms: 6,
      call_to_tool_p50_ms: 1,
      call_to_tool_p99_ms: 2,
      tool_to_model_p50_ms: 1,
      tool_to_model_p99_ms: 2,
      model_to_done_p50_ms: 1,
      model_to_done_p99_ms: 2,
      nats_in_msgs_per_task: 7,
      in_progress_acks_per_task: 8,
      other_acks_per_task: 9,
      nats_out_msgs_per_task: 10,
      executor_rss_kib_per_task: 11,
      gateway_rss_kib_per_stream: null,
      idle_ms_per_s: 5,
      idle_return_s: idle,
    });
    expect(medianOfPacedPasses([pass(1), pass(2), pass(3)]).idle_return_s).toBe(2);
    expect(medianOfPacedPasses([pass(1), pass(null), pass(3)]).idle_return_s).toBeNull();
  });
});

describe('the paced model and tool', () => {
  let server: PacedServer;
  beforeAll(async () => {
    server = await startPacedServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('when the floor runs a paced task, it gets the 300-token answer one token a delta, and the server tells its timings once', async () => {
    const result = await runPlainTask({
      modelBaseUrl: server.modelBaseUrl,
      toolUrl: server.toolUrl,
      userText: pacedUserMessage('t1'),
    });
    expect(result.answer).toBe(PACED_ANSWER);
    expect(result.messageChunks).toBe(PACED_ANSWER_TOKENS);

    const timings = await fetchPacedTimings(server.modelBaseUrl, ['t1', 'unknown']);
    expect([...timings.keys()]).toEqual(['t1']);
    const t1 = timings.get('t1')!;
    expect(t1.turns).toHaveLength(2);
    // The order of events, not their durations: tool-call turn, tool, answer turn, first content byte.
    const [call, answer] = t1.turns;
    expect(call!.endAt!).toBeLessThanOrEqual(t1.tool!.requestAt);
    expect(t1.tool!.endAt!).toBeLessThanOrEqual(answer!.requestAt);
    expect(t1.firstContentAt).toBe(answer!.firstByteAt);
    expect(answer!.firstByteAt!).toBeLessThanOrEqual(answer!.endAt!);
    // Asked again, the server has forgotten them.
    expect((await fetchPacedTimings(server.modelBaseUrl, ['t1'])).size).toBe(0);
    expect(server.active()).toBe(0);
  }, 30_000);
});
