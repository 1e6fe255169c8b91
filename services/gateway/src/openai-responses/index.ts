/**
 * The OpenAI Responses API door (`/v1/responses`): its routes and its wire mapping. The rules it shares
 * with the other doors are in `door-mapping/`; the OpenAI error shape and agent resolution in `openai/`.
 */
export { registerResponsesRoutes } from './response-routes.js';
export type { ResponsesRouteDeps } from './response-routes.js';
