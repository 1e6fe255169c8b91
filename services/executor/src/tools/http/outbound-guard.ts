// The executor's SSRF guard: the shared guard of @agentmesh/runtime (scheme, IP literal and metadata checks,
// DNS pinned inside the socket's lookup), throwing the tool error the loop turns into a FORBIDDEN outcome.
import {
  OutboundGuard as SharedOutboundGuard,
  type OutboundGuardOptions,
} from '@agentmesh/runtime/outbound-guard';
import { OutboundRequestDeniedError } from '../tool-errors.js';

export type { OutboundGuardOptions, ResolvedAddress } from '@agentmesh/runtime/outbound-guard';

export class OutboundGuard extends SharedOutboundGuard {
  constructor(options: OutboundGuardOptions = {}) {
    super({ ...options, deniedError: (target, reason) => new OutboundRequestDeniedError(target, reason) });
  }
}
