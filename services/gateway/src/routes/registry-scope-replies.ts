/**
 * What the agent and plugin routes share about tenancy: checking a definition name from the path before it
 * reaches a KV key (wildcards, spaces or unicode are a 400, not a 500), labelling what a read returns with
 * where it was found, and the refusal when an account caller tries to change the shared catalogue.
 */
import { scopeLabel, type RegistryScope } from '@agentmesh/bus';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { Forbidden, InvalidRequest, type Rejection } from '../errors.js';

/** A path segment naming a definition, checked with the protocol's schema for that kind of name. */
export function definitionName(schema: z.ZodType<string>, value: string, what: string): string | Rejection {
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : InvalidRequest.fromZod(parsed.error, what);
}

/** A definition as a read answers it: the definition plus `scope` (`account` or `shared`). */
export function labelled<T extends object>(definition: T, scope: RegistryScope): T & { scope: string } {
  return { ...definition, scope: scopeLabel(scope) };
}

/** An account caller aimed a write at something only the shared catalogue holds. */
export function sharedCatalogueIsReadOnly(kind: string, name: string): Rejection {
  return new Forbidden(
    `${kind} ${name} belongs to the shared catalogue, which only an admin key naming no account may change; create your own with PUT to override it for your account`,
  );
}

/** The registry scope the management plane's hook chose for this request (its account, or shared). */
export function registryScopeOf(request: FastifyRequest): RegistryScope {
  if (request.registryScope === undefined) throw new Error('management route reached without its hook');
  return request.registryScope;
}
