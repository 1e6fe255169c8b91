/**
 * What browsers need, registered in one place: CORS for allowed origins, stream tokens (issued, and on
 * the submit reply), the agent and task lists, and the web console at `/console`.
 */
import type { AgentStore, TaskStatusStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import type { StreamTokens } from '../stream-tokens.js';
import { registerConsoleRoutes } from './console.js';
import type { AuthenticateRequest } from './request-caller.js';
import { registerStreamTokenRoute } from './stream-token.js';
import { registerTaskListRoutes } from './task-list.js';

export interface BrowserAccessDeps {
  authenticate: AuthenticateRequest;
  statuses: TaskStatusStore;
  agents: AgentStore;
  streamTokens: StreamTokens;
  consoleEnabled: boolean;
}

export function registerBrowserAccessRoutes(app: FastifyInstance, deps: BrowserAccessDeps): void {
  registerStreamTokenRoute(app, deps);
  registerTaskListRoutes(app, deps);
  if (deps.consoleEnabled) registerConsoleRoutes(app);
}
