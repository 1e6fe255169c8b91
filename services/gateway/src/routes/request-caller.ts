/**
 * Authentication for HTTP routes: reads the caller's headers from a Fastify request and hands them
 * to the transport-neutral {@link Authenticator}, trusting account headers when configured to.
 */
import type { FastifyRequest } from 'fastify';
import type { Authenticator, Caller } from '../auth.js';
import type { Rejection } from '../errors.js';

export type AuthenticateRequest = (request: FastifyRequest) => Promise<Caller | Rejection>;

export function requestAuthenticator(auth: Authenticator, trustAccountHeaders: boolean): AuthenticateRequest {
  return (request) =>
    auth.authenticate(
      (name) => {
        const value = request.headers[name];
        return Array.isArray(value) ? value[0] : value;
      },
      { trustAccountHeaders },
    );
}
