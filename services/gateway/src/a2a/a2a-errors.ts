/**
 * How the A2A door says no in JSON-RPC. A2A's own conditions (task not found, not cancelable, push
 * notifications not supported, ...) are the SDK's errors with A2A's codes. The mesh's refusals (rate
 * limits, budgets, running-task caps, an unknown agent version, a busy thread, ...) keep the mesh's code:
 * INVALID_REQUEST is JSON-RPC's invalid params (-32602), anything else the implementation-defined
 * server error -32000; either way `error.data` holds a `google.rpc.ErrorInfo` whose `reason` is the
 * mesh's code, with `retryable` in its metadata, as A2A 1.0 puts error details.
 */
import { ErrorCode } from '@agentmesh/protocol';
import type { Rejection } from '../errors.js';
import { ServiceUnavailable } from '../errors.js';

export const JsonRpcCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  MESH_REFUSAL: -32000,
} as const;

export const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
const MESH_DOMAIN = 'agentmesh';

/** A mesh refusal thrown through the SDK's handler; the route answers it in the mesh's terms. */
export class MeshRefusal extends Error {
  override readonly name = 'MeshRefusal';
  constructor(readonly rejection: Rejection) {
    super(rejection.message, { cause: rejection });
  }

  static unavailable(message: string, cause: unknown): MeshRefusal {
    return new MeshRefusal(new ServiceUnavailable(message, { cause }));
  }
}

export interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

export function jsonRpcErrorOf(rejection: Rejection): JsonRpcError {
  return {
    code:
      rejection.code === ErrorCode.INVALID_REQUEST ? JsonRpcCode.INVALID_PARAMS : JsonRpcCode.MESH_REFUSAL,
    message: rejection.message,
    data: [
      {
        '@type': ERROR_INFO_TYPE,
        reason: rejection.code,
        domain: MESH_DOMAIN,
        metadata: { retryable: String(rejection.retryable) },
      },
    ],
  };
}

export const jsonRpcErrorEnvelope = (id: unknown, error: JsonRpcError) => ({
  jsonrpc: '2.0' as const,
  id: typeof id === 'string' || typeof id === 'number' ? id : null,
  error,
});
