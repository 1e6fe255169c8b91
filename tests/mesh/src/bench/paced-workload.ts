/**
 * The realistic-pace workload of issue 27 (`paced`): a scripted OpenAI-compatible model that waits
 * 400 ms before its first byte and then streams one token per delta at about 50 tokens/s, with one tool
 * call (a GET the tool API answers after 200 ms) and an answer of 300 tokens. It runs in the mocks'
 * child process (bench-mocks.ts), so its CPU is not charged to the mesh or to the floor, and paces with
 * one shared ticker (no busy loop, no timer per stream) that writes what is due by the clock. It records, per task, when each model turn and
 * the tool call arrived, wrote its first byte and ended, on the clock every process shares
 * (`performance.timeOrigin + performance.now()`), so the bench can set the client's times against the
 * model's: time-to-first-token overhead and end-to-end overhead beyond the model's own time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';

export const PACED_WORKLOAD = 'paced';
export const PACED_FIRST_BYTE_MS = 400;
/** One token per delta every 20 ms: 50 tokens/s. */
export const PACED_TOKEN_INTERVAL_MS = 20;
export const PACED_TOOL_MS = 200;
export const PACED_ANSWER_TOKENS = 300;
/** A paced task's own time, about: two model turns' first bytes, the tool, the answer's tokens. */
export const PACED_TASK_MS =
  2 * PACED_FIRST_BYTE_MS + PACED_TOOL_MS + PACED_ANSWER_TOKENS * PACED_TOKEN_INTERVAL_MS;
/**
 * The paced workload with steady arrivals: the same tasks and pace, with the first tasks of the pass
 * submitted one after another over a task's own time (PACED_TASK_MS ÷ tasks in flight apart) instead of
 * all in the same millisecond, as tasks of many users arrive; the same count is then in flight.
 */
export const PACED_STEADY_WORKLOAD = 'paced, steady arrivals';
/** The tool the paced model calls (a plugin of its own, pointing at the paced tool). */
export const PACED_TOOL_NAME = 'paced_lookup';
/** The answer: 300 tokens, each streamed as one delta. */
export const PACED_TOKENS: readonly string[] = Array.from(
  { length: PACED_ANSWER_TOKENS },
  (_, i) => `w${i % 10} `,
);
export const PACED_ANSWER = PACED_TOKENS.join('');

/** The user message that names a paced task; `key` is unique over the whole run. */
export const pacedUserMessage = (key: string): string => `${PACED_WORKLOAD} #${key}`;
export function pacedKeyOf(text: string): string | undefined {
  return text.startsWith(`${PACED_WORKLOAD} #`) ? text.slice(PACED_WORKLOAD.length + 2) : undefined;
}

/** Epoch ms with sub-ms precision, comparable between processes of one machine. */
export const clockMs = (): number => performance.timeOrigin + performance.now();

/** One exchange with the model or the tool: request in, first byte out, last byte out. */
export interface Exchange {
  requestAt: number;
  firstByteAt?: number;
  endAt?: number;
}

/** What the paced model and tool saw of one task. */
export interface PacedTimings {
  /** The model's turns in arrival order: the tool-call turn, then the answer. */
  turns: Exchange[];
  tool?: Exchange;
  /** When the answer's first content delta was written. */
  firstContentAt?: number;
}

/** The client's view of one task, on the same clock. */
export interface ClientTimes {
  submitAt: number;
  firstChunkAt: number | undefined;
  doneAt: number;
}

export interface TaskOverheads {
  /** Client's first content delta − the model's first content byte. */
  ttftOverheadMs: number | undefined;
  /** Client's end to end − the model's and the tool's own time (each request in → last byte out). */
  e2eOverheadMs: number | undefined;
  /** Submission → the model's first request. */
  submitToModelMs: number | undefined;
  /**
   * The rest of the e2e overhead, phase by phase: the tool-call turn's last byte → the tool's request, the
   * tool's answer → the answer turn's request, the answer's last byte → the client's terminal event.
   */
  callToToolMs: number | undefined;
  toolToModelMs: number | undefined;
  modelToDoneMs: number | undefined;
}

/** The overheads of one task; undefined parts where a time is missing (a failed task). */
export function taskOverheads(client: ClientTimes, model: PacedTimings | undefined): TaskOverheads {
  const first = model?.turns[0];
  const exchanges = [...(model?.turns ?? []), ...(model?.tool ? [model.tool] : [])];
  const complete =
    model !== undefined && model.turns.length >= 2 && exchanges.every((e) => e.endAt !== undefined);
  const ownMs = exchanges.reduce((sum, e) => sum + ((e.endAt ?? e.requestAt) - e.requestAt), 0);
  const [call, answer] = model?.turns ?? [];
  const tool = model?.tool;
  const gap = (from: number | undefined, to: number | undefined): number | undefined =>
    from !== undefined && to !== undefined ? to - from : undefined;
  return {
    ttftOverheadMs:
      client.firstChunkAt !== undefined && model?.firstContentAt !== undefined
        ? client.firstChunkAt - model.firstContentAt
        : undefined,
    e2eOverheadMs: complete ? client.doneAt - client.submitAt - ownMs : undefined,
    submitToModelMs: first ? first.requestAt - client.submitAt : undefined,
    callToToolMs: gap(call?.endAt, tool?.requestAt),
    toolToModelMs: gap(tool?.endAt, answer?.requestAt),
    modelToDoneMs: complete ? gap(answer?.endAt, client.doneAt) : undefined,
  };
}

interface ChatBody {
  messages?: { role?: string; content?: unknown }[];
}

const chunk = (delta: object, finish: string | null = null): string =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-paced',
    object: 'chat.completion.chunk',
    created: 1_760_000_000,
    model: 'paced',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;

/** The pieces a turn streams after its first byte, one per tick. */
export function turnPieces(key: string, answerTurn: boolean): string[] {
  if (answerTurn) {
    return [
      ...PACED_TOKENS.map((token, i) =>
        chunk(i === 0 ? { role: 'assistant', content: token } : { content: token }),
      ),
      chunk({}, 'stop') +
        `data: ${JSON.stringify({
          id: 'chatcmpl-paced',
          object: 'chat.completion.chunk',
          created: 1_760_000_000,
          model: 'paced',
          choices: [],
          usage: {
            prompt_tokens: 40,
            completion_tokens: PACED_ANSWER_TOKENS,
            total_tokens: 40 + PACED_ANSWER_TOKENS,
          },
        })}\n\ndata: [DONE]\n\n`,
    ];
  }
  // The tool call: its name first, then its arguments a token (about 4 characters) at a time.
  const args = JSON.stringify({ q: key });
  const pieces = [
    chunk({
      role: 'assistant',
      content: null,
      tool_calls: [
        { index: 0, id: `call_${key}`, type: 'function', function: { name: PACED_TOOL_NAME, arguments: '' } },
      ],
    }),
  ];
  for (let at = 0; at < args.length; at += 4) {
    pieces.push(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(at, at + 4) } }] }));
  }
  pieces.push(chunk({}, 'tool_calls') + 'data: [DONE]\n\n');
  return pieces;
}

interface ActiveStream {
  res: ServerResponse;
  pieces: string[];
  /** Index of the next piece to write. */
  next: number;
  exchange: Exchange;
}

export interface PacedServer {
  /** `http://127.0.0.1:<port>/v1`, the model's base URL. */
  modelBaseUrl: string;
  /** The tool's URL (GET `?q=<key>`). */
  toolUrl: string;
  /** Streams being written now. */
  active(): number;
  stop(): Promise<void>;
}

/**
 * Serves the paced model (`POST /v1/chat/completions`), the paced tool (`GET /lookup?q=`), and the
 * timings (`POST /timings` with a JSON array of keys: answers and forgets them).
 */
export async function startPacedServer(): Promise<PacedServer> {
  const timings = new Map<string, PacedTimings>();
  const streams = new Set<ActiveStream>();
  const timingsOf = (key: string): PacedTimings => {
    let found = timings.get(key);
    if (!found) timings.set(key, (found = { turns: [] }));
    return found;
  };
  // One ticker writes what is due of every open stream: a piece every 20 ms from its first byte. A late
  // tick (a busy machine) writes the pieces that fell due together, as a network would deliver them, so
  // the stream keeps its 50 tokens/s on average instead of stretching with every late timer.
  const ticker = setInterval(() => {
    const now = clockMs();
    for (const stream of streams) {
      const due = Math.min(
        stream.pieces.length,
        1 + Math.floor((now - stream.exchange.firstByteAt!) / PACED_TOKEN_INTERVAL_MS),
      );
      if (due <= stream.next) continue;
      stream.res.write(stream.pieces.slice(stream.next, due).join(''));
      stream.next = due;
      if (stream.next === stream.pieces.length) {
        stream.res.end();
        stream.exchange.endAt = clockMs();
        streams.delete(stream);
      }
    }
  }, PACED_TOKEN_INTERVAL_MS);

  const startStream = (res: ServerResponse, key: string, answer: boolean, exchange: Exchange): void => {
    const timingsForKey = timingsOf(key);
    setTimeout(() => {
      if (res.destroyed) return;
      const pieces = turnPieces(key, answer);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // The first delta leaves at the first byte; the rest follow the ticker.
      res.write(pieces[0]);
      exchange.firstByteAt = clockMs();
      if (answer) timingsForKey.firstContentAt = exchange.firstByteAt;
      streams.add({ res, pieces, next: 1, exchange });
    }, PACED_FIRST_BYTE_MS);
  };

  const onChat = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const requestAt = clockMs();
    const chat = JSON.parse(body) as ChatBody;
    const user = chat.messages?.find((message) => message.role === 'user');
    const key = typeof user?.content === 'string' ? pacedKeyOf(user.content) : undefined;
    if (key === undefined) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'not a paced task' } }));
      return;
    }
    const answer = chat.messages?.at(-1)?.role === 'tool';
    const exchange: Exchange = { requestAt };
    timingsOf(key).turns.push(exchange);
    startStream(res, key, answer, exchange);
  };

  const onTool = (url: URL, res: ServerResponse): void => {
    const key = url.searchParams.get('q') ?? '';
    const exchange: Exchange = { requestAt: clockMs() };
    timingsOf(key).tool = exchange;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ company: 'ByteDance', founded: 2012, q: key }));
      exchange.firstByteAt = exchange.endAt = clockMs();
    }, PACED_TOOL_MS);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (piece: Buffer) => chunks.push(piece));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        if (req.method === 'POST' && url.pathname.endsWith('/chat/completions')) onChat(req, res, body);
        else if (req.method === 'GET' && url.pathname === '/lookup') onTool(url, res);
        else if (req.method === 'POST' && url.pathname === '/timings') {
          const keys = JSON.parse(body) as string[];
          const found: Record<string, PacedTimings> = {};
          for (const key of keys) {
            const entry = timings.get(key);
            if (entry) found[key] = entry;
            timings.delete(key);
          }
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(found));
        } else {
          res.writeHead(404);
          res.end();
        }
      } catch (error) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(error) } }));
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    modelBaseUrl: `${base}/v1`,
    toolUrl: `${base}/lookup`,
    active: () => streams.size,
    async stop() {
      clearInterval(ticker);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Asks the paced server for the timings of `keys` (and makes it forget them). */
export async function fetchPacedTimings(
  modelBaseUrl: string,
  keys: readonly string[],
): Promise<Map<string, PacedTimings>> {
  const response = await fetch(new URL('/timings', modelBaseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(keys),
  });
  if (!response.ok) throw new Error(`paced model /timings answered ${response.status}`);
  return new Map(Object.entries((await response.json()) as Record<string, PacedTimings>));
}
