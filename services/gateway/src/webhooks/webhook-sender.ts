/**
 * One signed POST of a webhook body to an endpoint, through the SSRF guard (scheme, IP literal and metadata
 * host before the request, every resolved address inside the connection's own lookup), within a connect
 * budget and a whole-attempt budget. No redirects are followed (undici's request does not): a 3xx is a
 * failed attempt. The answer's body is drained, never read into memory beyond a small excerpt.
 */
import {
  OutboundDeniedError,
  OutboundGuard,
  type OutboundGuardOptions,
} from '@agentmesh/runtime/outbound-guard';
import { signWebhook } from './signature.js';

export interface WebhookSenderOptions {
  allowHosts: readonly string[];
  connectTimeoutMs: number;
  timeoutMs: number;
  /** Plays DNS in tests (rebinding). */
  resolveHost?: OutboundGuardOptions['resolveHost'];
}

export type SendOutcome =
  | { readonly ok: true; readonly status: number }
  /** `permanent`: the SSRF guard refused the target; trying again changes nothing until the allow-list does. */
  | { readonly ok: false; readonly status?: number; readonly error: string; readonly permanent: boolean };

const EXCERPT_BYTES = 200;

export class WebhookSender {
  readonly guard: OutboundGuard;
  readonly #agent: ReturnType<OutboundGuard['createAgent']>;
  readonly #timeoutMs: number;

  constructor(options: WebhookSenderOptions) {
    this.guard = new OutboundGuard({
      allowHosts: options.allowHosts,
      ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
    });
    this.#agent = this.guard.createAgent({
      connectTimeout: options.connectTimeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 10_000,
    });
    this.#timeoutMs = options.timeoutMs;
  }

  /** Throws OutboundDeniedError when `url` is refused before any DNS (scheme, IP literal, metadata host). */
  checkUrl(url: string): void {
    this.guard.checkUrl(new URL(url));
  }

  /** Also resolves the host and checks every address (registration). */
  async checkTarget(url: string): Promise<void> {
    const parsed = new URL(url);
    this.guard.checkUrl(parsed);
    await this.guard.resolve(parsed.hostname.replace(/^\[|\]$/g, ''));
  }

  async send(
    url: string,
    webhookId: string,
    body: string,
    secrets: readonly string[],
    now = Date.now(),
  ): Promise<SendOutcome> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const target = new URL(url);
      this.guard.checkUrl(target);
      const response = await this.#agent.request({
        origin: target.origin,
        path: target.pathname + target.search,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'agentmesh-webhooks/1',
          ...signWebhook(webhookId, Math.floor(now / 1000), body, secrets),
        },
        body,
        signal,
      });
      const status = response.statusCode;
      if (status >= 200 && status <= 299) {
        await response.body.dump();
        return { ok: true, status };
      }
      const excerpt = await readExcerpt(response.body);
      return { ok: false, status, error: `HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`, permanent: false };
    } catch (error) {
      const denied = findDenial(error);
      if (denied) return { ok: false, error: denied.message, permanent: true };
      if (signal.aborted) {
        return { ok: false, error: `no answer within ${this.#timeoutMs} ms`, permanent: false };
      }
      const err = error as { code?: string; message?: string };
      return {
        ok: false,
        error: `${err.code ?? 'ERROR'}: ${err.message ?? String(error)}`,
        permanent: false,
      };
    }
  }

  /** Aborts the attempts in flight (they fail, not permanently) and closes the connections. */
  async close(): Promise<void> {
    await this.#agent.destroy();
  }
}

function findDenial(error: unknown): OutboundDeniedError | undefined {
  for (let current = error, depth = 0; current !== undefined && depth < 5; depth++) {
    if (current instanceof OutboundDeniedError) return current;
    current = (current as { cause?: unknown } | null)?.cause;
  }
  return undefined;
}

async function readExcerpt(body: AsyncIterable<Buffer> & { dump(): Promise<void> }): Promise<string> {
  let text = '';
  for await (const chunk of body) {
    text += chunk.toString('utf8');
    if (text.length >= EXCERPT_BYTES) break;
  }
  await body.dump().catch(() => undefined);
  return text.slice(0, EXCERPT_BYTES).replace(/\s+/g, ' ').trim();
}
