/**
 * The `preview` a task's status record keeps: the start of its last user message, so a task list can show
 * and search what was asked without reading the task stream. The gateway holds no task's secret values
 * (only the executor opens a vault, and scrubs events with them), so a preview is masked by shape instead:
 * tokens that look like credentials (bearer values, well-known key prefixes, JWTs, long unbroken
 * base64/hex runs) become `[redacted]` before it is cut, and the process's secret filters apply as in logs.
 */
import { TASK_PREVIEW_LENGTH } from '@agentmesh/protocol';
import { filterSecrets, REDACTED } from '@agentmesh/runtime';

interface MessageLike {
  readonly role: string;
  readonly content?: unknown;
}

const CREDENTIAL_SHAPES: readonly RegExp[] = [
  // `Bearer <value>`, `Basic <value>`
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi,
  // `password=…`, `api_key: …`, `token=…`
  /\b([A-Za-z_-]*(?:pass(?:word)?|secret|token|api[_-]?key|apikey)[A-Za-z_-]*)\s*[:=]\s*\S+/gi,
  // Well-known key prefixes: OpenAI/Anthropic `sk-`, GitHub, Slack, AWS access keys, Google API keys.
  /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}/g,
  /\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{10,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{8,}/g,
  /\b(?:AKIA|ASIA)[A-Z0-9]{12,}/g,
  /\bAIza[A-Za-z0-9_-]{20,}/g,
  // JWTs
  /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g,
  // Any unbroken run of 32+ key-like characters with a digit in it (hex digests, base64 keys).
  /\b(?=[A-Za-z0-9+/_=-]*\d)[A-Za-z0-9+/_=-]{32,}/g,
];

/** `text` with credential-shaped tokens replaced by `[redacted]`. */
export function maskCredentials(text: string): string {
  let out = filterSecrets(text);
  for (const shape of CREDENTIAL_SHAPES) {
    out = out.replace(shape, (match: string, name?: string) =>
      // Keep the word that names the value (`Bearer`, `password=`), so the preview still reads.
      typeof name === 'string' && /^(bearer|basic)$/i.test(name)
        ? `${name} ${REDACTED}`
        : typeof name === 'string'
          ? `${name}=${REDACTED}`
          : REDACTED,
    );
  }
  return out;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) =>
      typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text'
        ? String((part as { text?: unknown }).text ?? '')
        : '',
    )
    .filter((text) => text.length > 0)
    .join(' ');
}

/**
 * The masked start of the last user message of `messages` (whitespace collapsed), at most
 * TASK_PREVIEW_LENGTH characters with `…` where it was cut; undefined when there is no user text.
 */
export function taskPreview(messages: readonly MessageLike[] | undefined): string | undefined {
  const user = [...(messages ?? [])].reverse().find((message) => message.role === 'user');
  if (user === undefined) return undefined;
  // Masked before the cut, so half a credential at the edge is never kept; only a bounded head is masked
  // (the masks are linear in what they read), and a token cut at that head's end is cut off with it.
  const collapsed = textOf(user.content)
    .slice(0, 64 * TASK_PREVIEW_LENGTH)
    .replace(/\s+/g, ' ')
    .trim();
  const limit = 4 * TASK_PREVIEW_LENGTH;
  const head = collapsed.length <= limit ? collapsed : collapsed.slice(0, limit).replace(/\S*$/, '');
  const text = maskCredentials(head).trim();
  if (text.length === 0) return undefined;
  return text.length <= TASK_PREVIEW_LENGTH ? text : `${text.slice(0, TASK_PREVIEW_LENGTH - 1)}…`;
}
