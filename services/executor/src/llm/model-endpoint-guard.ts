/**
 * The outbound guard for model endpoints. A task's model `base_url` is data from the agent definition, and the
 * request to it carries the model key, so it gets the same SSRF checks as tool requests: the scheme and an IP
 * literal before each attempt, and every address a host name resolves to inside the connection's own lookup
 * (DNS pinned: the checked address is the one connected to). Its allow-list is its own (the executor's
 * MODEL_ALLOW_HOSTS), so allowing a local model server does not open that host to tools, or the reverse.
 * Redirects are never followed: undici's plain request does not, and a 3xx is a failed answer.
 */
import type { Agent } from 'undici';
import { OutboundGuard, type OutboundGuardOptions } from '../tools/http/outbound-guard.js';
import { findDenial } from '../tools/http/outbound-request.js';
import { OutboundRequestDeniedError } from '../tools/tool-errors.js';
import { LlmEndpointDeniedError } from './errors.js';

export type ModelEndpointGuardOptions = OutboundGuardOptions;

export class ModelEndpointGuard {
  /** Keep-alive connections to the model hosts, each opened through the guard's lookup. */
  readonly dispatcher: Agent;
  readonly #guard: OutboundGuard;

  constructor(options: ModelEndpointGuardOptions = {}) {
    this.#guard = new OutboundGuard(options);
    this.dispatcher = this.#guard.createAgent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 300_000 });
  }

  /**
   * Throws {@link LlmEndpointDeniedError} when `url`'s scheme, IP literal or metadata host name is denied.
   * `attempts`: the requests already sent in this call, for the error's detail.
   */
  check(url: URL, attempts: number): void {
    try {
      this.#guard.checkUrl(url);
    } catch (error) {
      if (error instanceof OutboundRequestDeniedError) throw deniedError(error, attempts);
      throw error;
    }
  }

  /** The guard's verdict inside a failed request (a host name resolving to a denied address), if it was one. */
  denial(error: unknown, attempts: number): LlmEndpointDeniedError | undefined {
    const denied = findDenial(error);
    return denied === undefined ? undefined : deniedError(denied, attempts);
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

function deniedError(denied: OutboundRequestDeniedError, attempts: number): LlmEndpointDeniedError {
  const reason = `${denied.reason}; nothing was sent (allow the host with MODEL_ALLOW_HOSTS)`;
  return new LlmEndpointDeniedError(
    `model endpoint ${denied.target} denied: ${reason}`,
    { reason, attempts },
    { cause: denied },
  );
}
