/**
 * The bench's mocks in a child process of their own: the zero-latency scripted model and the recording
 * tool API of the classic workloads, and the paced model and tool (paced-workload.ts). Keeping them out
 * of the bench process lets the bench report the floor's own CPU (the in-process loop alone, as outside
 * benches do) and the mocks' CPU as a column apart. Started with `fork`; tells its URLs over IPC, stops
 * on SIGTERM or when the parent goes.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { startRecordingApi, startScriptedModel } from '@agentmesh/testkit';
import { startPacedServer } from './paced-workload.js';
import { benchReply } from './workloads.js';

export interface MockUrls {
  modelBaseUrl: string;
  /** The recording API's `/lookup` URL. */
  toolUrl: string;
  pacedModelBaseUrl: string;
  pacedToolUrl: string;
}

export interface BenchMocks extends MockUrls {
  pid: number;
  stop(): Promise<void>;
}

/** Forks this module as the mocks' process and waits for its URLs. */
export async function startBenchMocks(): Promise<BenchMocks> {
  const child: ChildProcess = fork(new URL(import.meta.url), ['--serve-mocks'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [urls] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the bench mocks' process exited (${String(code)}) before it was ready`);
    }),
  ])) as [MockUrls];
  if (child.pid === undefined) throw new Error("the bench mocks' process has no pid");
  const pid = child.pid;
  return {
    ...urls,
    pid,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function serve(): Promise<void> {
  const api = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/lookup',
        reply: { status: 200, body: { company: 'ByteDance', founded: 2012 } },
      },
    ],
  });
  const model = await startScriptedModel({ respond: benchReply });
  const paced = await startPacedServer();
  // The recording API and the scripted model keep every request; the bench never reads them here, so
  // drop them as they come, or a long run would only grow this process.
  const forget = setInterval(() => {
    api.requests.length = 0;
    model.requests.length = 0;
  }, 1_000);
  const stop = async (): Promise<void> => {
    clearInterval(forget);
    await Promise.all([api.stop(), model.stop(), paced.stop()]);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('disconnect', () => void stop());
  const urls: MockUrls = {
    modelBaseUrl: model.baseUrl,
    toolUrl: `${api.url}/lookup`,
    pacedModelBaseUrl: paced.modelBaseUrl,
    pacedToolUrl: paced.toolUrl,
  };
  process.send?.(urls);
}

if (process.argv.includes('--serve-mocks')) await serve();
