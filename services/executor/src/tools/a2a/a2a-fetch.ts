// `fetch` for one A2A tool call, as the SDK's transports use it: through the executor's SSRF guard (the URL
// checked first, the socket opened only to checked addresses), no redirects followed, and the tool's
// credential header added to requests for the card's own origin only. A card naming another origin while the
// tool carries a credential fails the call instead of sending the credential there.
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import type { OutboundGuard } from '../http/outbound-guard.js';
import { CredentialOriginError } from './a2a-errors.js';

export interface A2aFetchOptions {
  readonly guard: OutboundGuard;
  readonly dispatcher: Dispatcher;
  /** The origin of the tool's card URL: the only one credentials go to. */
  readonly origin: string;
  /** The credential header(s); empty for a tool without auth. */
  readonly credentials: Readonly<Record<string, string>>;
  /** Told the status of every response (the runner names a 401/403 as an auth failure). */
  readonly onStatus?: (status: number) => void;
}

export function a2aFetch(options: A2aFetchOptions): typeof fetch {
  const { guard, dispatcher, origin, credentials, onStatus } = options;
  const carriesCredentials = Object.keys(credentials).length > 0;
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input instanceof URL ? input.href : input);
    guard.checkUrl(url);
    if (carriesCredentials && url.origin !== origin) {
      throw new CredentialOriginError(
        `the agent card sends calls to ${url.origin}, not to its own origin ${origin}; the tool's credential goes to the card's origin only`,
        { detail: { card_origin: origin, interface_origin: url.origin } },
      );
    }
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(credentials)) headers.set(name, value);
    const response = await undiciFetch(url, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      headers: Object.fromEntries(headers),
      dispatcher,
      redirect: 'error',
    });
    onStatus?.(response.status);
    return response as unknown as Response;
  }) as typeof fetch;
}
