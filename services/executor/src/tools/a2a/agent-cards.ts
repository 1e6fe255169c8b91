// Agent Cards of the A2A tools: read through the SSRF guard (size-limited, with a time limit), normalised
// by the SDK's resolver (v1.0 cards, and v0.3 ones translated), kept for a while per account, credential
// and card URL (a credential may unlock a card meant for its holder alone, so nobody reads another's copy).
// Also what the model is told of an A2A tool: the card's name and description, or its named skill.
import { createHash } from 'node:crypto';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import type { AgentCard } from '@a2a-js/sdk';
import {
  A2A_CONTINUE_TASK_ARGUMENT,
  a2aMessageParameters,
  type A2aTool,
  type JsonSchemaObject,
} from '@agentmesh/protocol';
import { findDenial } from '../http/outbound-request.js';
import { ToolCallError } from '../tool-errors.js';
import { AgentCardError, RemoteAgentAuthError } from './a2a-errors.js';

export interface AgentCardsOptions {
  /** Bytes of a card read at most; a larger one is refused. */
  readonly maxBytes: number;
  /** How long a card read is reused. */
  readonly ttlMs: number;
  /** How long reading a card may take. */
  readonly timeoutMs: number;
  /** Cards kept at most (the oldest go first). */
  readonly maxEntries?: number;
}

const resolver = new DefaultAgentCardResolver({ legacyCompat: { enabled: true } });

export class AgentCards {
  readonly #cards = new Map<string, { card: AgentCard; expires: number }>();

  constructor(private readonly options: AgentCardsOptions) {}

  /**
   * The card at `url`, read with `fetcher` (the call's guarded fetch, carrying `credentials`) unless a fresh
   * copy read by the same account with the same credentials is kept.
   */
  async get(
    scope: { account: string; credentials: Readonly<Record<string, string>> },
    url: string,
    fetcher: typeof fetch,
    signal?: AbortSignal,
  ): Promise<AgentCard> {
    // The credentials by digest only: the key holds no secret.
    const digest = createHash('sha256').update(JSON.stringify(scope.credentials)).digest('base64url');
    const key = `${scope.account}\u0000${digest}\u0000${url}`;
    const kept = this.#cards.get(key);
    if (kept !== undefined && kept.expires > Date.now()) return kept.card;
    const card = await this.#read(url, fetcher, signal);
    this.#cards.delete(key);
    this.#cards.set(key, { card, expires: Date.now() + this.options.ttlMs });
    const max = this.options.maxEntries ?? 1024;
    for (const oldest of this.#cards.keys()) {
      if (this.#cards.size <= max) break;
      this.#cards.delete(oldest);
    }
    return card;
  }

  async #read(url: string, fetcher: typeof fetch, signal?: AbortSignal): Promise<AgentCard> {
    const limit = AbortSignal.timeout(this.options.timeoutMs);
    try {
      const response = await fetcher(url, {
        headers: { accept: 'application/json' },
        signal: signal === undefined ? limit : AbortSignal.any([signal, limit]),
      });
      if (response.status === 401 || response.status === 403) {
        await response.body?.cancel();
        throw new RemoteAgentAuthError(
          `the agent card at ${url} was refused (HTTP ${response.status}); the tool's credential is missing or not accepted`,
          { detail: { card_url: url, status: response.status } },
        );
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new AgentCardError(`the agent card at ${url} could not be read: HTTP ${response.status}`, {
          detail: { card_url: url, status: response.status },
        });
      }
      const text = await readLimited(response, this.options.maxBytes, url);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new AgentCardError(`the agent card at ${url} is not JSON`, { detail: { card_url: url } });
      }
      const card = resolver.normalizeAgentCard(parsed);
      if (typeof card.name !== 'string' || !Array.isArray(card.supportedInterfaces)) {
        throw new AgentCardError(`the agent card at ${url} is not an A2A agent card`, {
          detail: { card_url: url },
        });
      }
      return card;
    } catch (error) {
      if (error instanceof ToolCallError) throw error;
      const denial = findDenial(error);
      if (denial !== undefined) throw denial;
      const why = limit.aborted ? `no answer within ${this.options.timeoutMs} ms` : describe(error);
      throw new AgentCardError(`the agent card at ${url} could not be read: ${why}`, {
        detail: { card_url: url },
        cause: error,
      });
    }
  }
}

async function readLimited(response: Response, maxBytes: number, url: string): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  const tooLarge = () =>
    new AgentCardError(`the agent card at ${url} is larger than ${maxBytes} bytes`, {
      detail: { card_url: url, max_bytes: maxBytes },
    });
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The tool as the model sees it, described by its card: a stored description (or parameters) win over the card's. */
export function describedA2aTool(tool: A2aTool, card: AgentCard): A2aTool {
  const skill = tool.skill === undefined ? undefined : card.skills.find((entry) => entry.id === tool.skill);
  const about = skill === undefined ? cardSummary(card) : `${card.name}: ${skill.name}. ${skill.description}`;
  const examples = (skill?.examples ?? []).slice(0, 3);
  const message =
    'What to ask the remote agent: the whole request, self-contained (it sees nothing else of this conversation).' +
    (examples.length > 0
      ? ` For example: ${examples.map((example) => JSON.stringify(example)).join('; ')}.`
      : '');
  // Parameters an admin stored (more than the default `message`) are kept as they are.
  const ownParameters = JSON.stringify(tool.parameters) !== JSON.stringify(a2aMessageParameters());
  return {
    ...tool,
    description: tool.description.trim() !== '' ? tool.description : clip(about, 1024),
    parameters: withContinuation(ownParameters ? tool.parameters : a2aMessageParameters(clip(message, 1024))),
  };
}

/** The parameters with `continue_task_id`, which answers a remote task that asked for more input. */
function withContinuation(parameters: JsonSchemaObject): JsonSchemaObject {
  if (parameters.properties?.[A2A_CONTINUE_TASK_ARGUMENT] !== undefined) return parameters;
  return {
    ...parameters,
    properties: {
      ...parameters.properties,
      [A2A_CONTINUE_TASK_ARGUMENT]: {
        type: 'string',
        description:
          'Only to answer a remote task that stopped to ask for more input: the task id that answer gave. Leave it out to start a new task.',
      },
    },
  };
}

function cardSummary(card: AgentCard): string {
  const skills = card.skills.map((skill) => skill.name || skill.id).filter((name) => name !== '');
  const lead = card.description.trim() === '' ? card.name : `${card.name}: ${card.description}`;
  return skills.length === 0 ? lead : `${lead} Skills: ${skills.slice(0, 10).join(', ')}.`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
