/**
 * Secrets a task's tools derive from its vault before sending them: the `user:password` pair of HTTP Basic
 * and its base64, and the form-encoded `client_id:client_secret` pair an OAuth2 client authenticates with
 * and its base64. They are known from the tools' auth configs as soon as the vault opens, so they are
 * scrubbed from the start, not only once a tool has used them. (Tokens fetched later are added by the HTTP
 * runner when it gets them.) A model key entry holding AWS credentials (a `bedrock-converse` model) adds
 * each of its parts: the key id, the secret and the session token are each a secret alone.
 */
import { MODEL_API_KEY_VAULT_ENTRY, type ClearVault, type ToolDefinition } from '@agentmesh/protocol';
import { credentialSecrets } from '../llm/bedrock-converse/bedrock-credentials.js';
import { clientBasicCredential } from '../tools/http/oauth2-token-request.js';

export function derivedSecrets(tools: readonly ToolDefinition[], vault: ClearVault): string[] {
  const derived: string[] = [];
  for (const tool of tools) {
    if (tool.type !== 'HTTP' || tool.auth === undefined) continue;
    const { auth } = tool;
    if (auth.type === 'basic') {
      const user = vault[auth.username_source];
      const password = vault[auth.password_source];
      if (user === undefined || password === undefined) continue;
      const pair = `${user}:${password}`;
      derived.push(pair, Buffer.from(pair).toString('base64'));
    } else if (auth.type === 'oauth2') {
      const clientId = vault[auth.oauth2.client_id_source];
      const clientSecret = vault[auth.oauth2.client_secret_source];
      if (clientId === undefined || clientSecret === undefined) continue;
      const credential = clientBasicCredential({ config: auth.oauth2, clientId, clientSecret });
      derived.push(credential, Buffer.from(credential, 'base64').toString('utf8'));
    }
  }
  for (const [name, value] of Object.entries(vault)) {
    if (name.startsWith(MODEL_API_KEY_VAULT_ENTRY)) derived.push(...credentialSecrets(value));
  }
  return derived;
}
