/**
 * The A2A door (Agent2Agent, v1.0 and 0.3 over JSON-RPC): Agent Cards for the account's agents and each
 * agent's JSON-RPC endpoint, over mesh tasks. Routes in a2a-routes.ts, the wire mapping in the rest.
 */
export { registerA2aRoutes, type A2aRouteDeps } from './a2a-routes.js';
