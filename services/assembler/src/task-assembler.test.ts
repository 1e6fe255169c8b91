import {
  AgentDefinition,
  AssembledTask,
  MODEL_API_KEY_VAULT_ENTRY,
  modelApiKeyVaultEntry,
  ReceivedTask,
  TaskLimits,
  McpServerDefinition,
  ToolDefinition,
  type AgentDefinitionInput,
  type McpServerDefinitionInput,
} from '@agentmesh/protocol';
import { generateVaultKeyPair, openTaskVault, sealVault, VaultTamperedError } from '@agentmesh/vault';
import { describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  CANARY,
  qichachaAgent,
  qichachaTool,
  receivedTask,
  USER,
  weatherTool,
} from './__fixtures__/assembly.js';
import { assembleTask, toolDigest, type AssemblyOutcome, type AssemblySources } from './task-assembler.js';

const executorKey = generateVaultKeyPair('exec-2026-01');
const keyring = new Map([[executorKey.kid, executorKey.privateKey]]);

interface World {
  agents?: AgentDefinitionInput[];
  tools?: ToolDefinition[];
  mcpServers?: McpServerDefinitionInput[];
  /** Credentials of USER in ACCOUNT. */
  credentials?: Record<string, string>;
}

/** Sources over plain data: the assembler's logic without NATS (the stores are covered by the int tests). */
function sources({ agents = [], tools = [], mcpServers = [], credentials = {} }: World): AssemblySources {
  const agentMap = new Map(agents.map((agent) => [agent.workflow_id, AgentDefinition.parse(agent)]));
  const toolMap = new Map(tools.map((tool) => [tool.name, tool]));
  const serverMap = new Map(mcpServers.map((server) => [server.name, McpServerDefinition.parse(server)]));
  return {
    mcpServers: { resolve: async (_account, name) => serverMap.get(name) },
    agents: {
      resolve: async (_account, id) => {
        const agent = agentMap.get(id);
        return agent && { agent };
      },
    },
    tools: { resolve: async (_account, name) => toolMap.get(name) },
    credentials: {
      async resolve(accountId, userId, names) {
        const own = accountId === ACCOUNT && userId === USER ? credentials : {};
        const values: Record<string, string> = {};
        const missing: string[] = [];
        for (const name of names) {
          if (own[name] === undefined) missing.push(name);
          else values[name] = own[name];
        }
        return { values, missing };
      },
    },
    sealFor: { kid: executorKey.kid, publicKey: executorKey.publicKey },
  };
}

const fullWorld: World = {
  agents: [qichachaAgent()],
  tools: [qichachaTool(), weatherTool()],
  credentials: {
    QCC_KEY: CANARY.QCC_KEY,
    QCC_SECRET: CANARY.QCC_SECRET,
    WEATHER_TOKEN: CANARY.WEATHER_TOKEN,
    MODEL_KEY: CANARY.MODEL_KEY,
  },
};

function assembled(outcome: AssemblyOutcome): AssembledTask {
  if (!outcome.ok)
    throw new Error(`expected an assembled task, got ${outcome.failure.code}: ${outcome.failure.message}`);
  return outcome.task;
}

function failed(outcome: AssemblyOutcome) {
  if (outcome.ok) throw new Error('expected the assembly to fail');
  return outcome.failure;
}

describe('assembling a task from the registry', () => {
  it('when the agent is bound to one of two registered tools, the task carries only that tool, the agent’s model and its limits', async () => {
    const task = receivedTask('company_research');
    const result = assembled(await assembleTask(task, sources(fullWorld)));

    expect(AssembledTask.safeParse(result).success).toBe(true);
    expect(result.runtime_config.tools.map((tool) => tool.name)).toEqual(['search_company_basic']);
    expect(result.runtime_config.tools[0]).toEqual(qichachaTool());
    expect(result.runtime_config.model).toEqual({
      // The agent names no provider: the generic OpenAI-compatible profile.
      provider: 'generic',
      model_name: 'demo-model',
      base_url: 'http://127.0.0.1:9/v1',
      temperature: 0.2,
      tool_protocol: 'native',
    });
    expect(result.limits).toEqual({ max_steps: 7, deadline_ms: 120_000 });
    // The task as received, plus the digest of each tool it runs (what an unpinned task ran).
    expect(result.task_meta).toEqual({
      ...task.task_meta,
      tool_digests: { search_company_basic: toolDigest(qichachaTool()) },
    });
    expect(result.input.variables).toEqual({ lang: 'en' });
  });

  it('the model api key moves into the sealed vault; the vault opens with the executors’ private key in this task only', async () => {
    const task = receivedTask('company_research');
    const result = assembled(await assembleTask(task, sources(fullWorld)));

    expect(JSON.stringify(result.runtime_config.model)).not.toContain('api_key');
    expect(result.runtime_config.vault.kid).toBe(executorKey.kid);
    const vault = openTaskVault(result, keyring);
    expect(vault).toEqual({
      QCC_KEY: CANARY.QCC_KEY,
      QCC_SECRET: CANARY.QCC_SECRET,
      [MODEL_API_KEY_VAULT_ENTRY]: CANARY.MODEL_KEY,
    });
    const otherTrace = receivedTask('company_research').task_meta.trace_id;
    const replayed = { ...result, task_meta: { ...result.task_meta, trace_id: otherTrace } };
    expect(() => openTaskVault(replayed, keyring)).toThrow(VaultTamperedError);
    const otherAccount = { ...result, task_meta: { ...result.task_meta, account_id: 'globex' } };
    expect(() => openTaskVault(otherAccount, keyring)).toThrow(VaultTamperedError);
  });

  it("when the agent's model names an api, the task carries it, and a task re-targeted to another api does not open", async () => {
    const agent = qichachaAgent();
    const world = {
      ...fullWorld,
      agents: [{ ...agent, model: { ...agent.model, api: 'anthropic-messages' as const } }],
    };
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(result.runtime_config.model.api).toBe('anthropic-messages');
    expect(openTaskVault(result, keyring)).toHaveProperty(MODEL_API_KEY_VAULT_ENTRY);
    const model = { ...result.runtime_config.model, api: 'openai-responses' };
    const retargeted = { ...result, runtime_config: { ...result.runtime_config, model } };
    expect(() => openTaskVault(retargeted, keyring)).toThrow(VaultTamperedError);
    const { api: _api, ...withoutApi } = result.runtime_config.model;
    const stripped = { ...result, runtime_config: { ...result.runtime_config, model: withoutApi } };
    expect(() => openTaskVault(stripped, keyring)).toThrow(VaultTamperedError);
  });

  it("when the agent's model is a bedrock-converse model with a thinking budget, the task carries both, its key is sealed as the model key, and a task with the budget changed does not open", async () => {
    const agent = qichachaAgent();
    const model = { ...agent.model, api: 'bedrock-converse' as const, thinking_budget_tokens: 4096 };
    const world = { ...fullWorld, agents: [{ ...agent, model }] };
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(result.runtime_config.model).toMatchObject({
      api: 'bedrock-converse',
      thinking_budget_tokens: 4096,
    });
    expect(openTaskVault(result, keyring)).toHaveProperty(MODEL_API_KEY_VAULT_ENTRY);
    const changed = { ...result.runtime_config.model, thinking_budget_tokens: 64_000 };
    const tampered = { ...result, runtime_config: { ...result.runtime_config, model: changed } };
    expect(() => openTaskVault(tampered, keyring)).toThrow(VaultTamperedError);
  });

  it("when the agent's model says stream: false, the task's model carries it; absent, the task's model has none (streamed)", async () => {
    const agent = qichachaAgent();
    const world = { ...fullWorld, agents: [{ ...agent, model: { ...agent.model, stream: false } }] };
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(world)));
    expect(result.runtime_config.model.stream).toBe(false);

    const streamed = assembled(await assembleTask(receivedTask('company_research'), sources(fullWorld)));
    expect(streamed.runtime_config.model.stream).toBeUndefined();
  });

  it("when the agent's model names a provider, the task carries it, and a task re-targeted to another provider does not open", async () => {
    const agent = qichachaAgent();
    const world = {
      ...fullWorld,
      agents: [{ ...agent, model: { ...agent.model, provider: 'deepseek' as const } }],
    };
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(result.runtime_config.model.provider).toBe('deepseek');
    expect(openTaskVault(result, keyring)).toHaveProperty(MODEL_API_KEY_VAULT_ENTRY);
    const model = { ...result.runtime_config.model, provider: 'deepseek-r1' };
    const retargeted = { ...result, runtime_config: { ...result.runtime_config, model } };
    expect(() => openTaskVault(retargeted, keyring)).toThrow(VaultTamperedError);
  });

  it('when the agent names a list of models, the first is the model, the rest are fallbacks, each one’s key sealed under its own vault entry, with the agent’s output schema', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const agent = qichachaAgent({
      model: [
        { model_name: 'demo-model', base_url: 'http://127.0.0.1:9/v1', api_key_credential: 'MODEL_KEY' },
        {
          provider: 'mistral',
          model_name: 'backup-model',
          base_url: 'http://127.0.0.1:10/v1',
          api_key_credential: 'BACKUP_KEY',
          limits: { max_concurrent: 4, rpm: 60 },
        },
      ],
      output_schema: schema,
    });
    const world = {
      ...fullWorld,
      agents: [agent],
      credentials: { ...fullWorld.credentials, BACKUP_KEY: 'canary-backup-key-77' },
    };
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(result.runtime_config.model).toMatchObject({ model_name: 'demo-model' });
    expect(result.runtime_config.fallback_models).toEqual([
      {
        provider: 'mistral',
        model_name: 'backup-model',
        base_url: 'http://127.0.0.1:10/v1',
        tool_protocol: 'native',
        limits: { max_concurrent: 4, rpm: 60 },
      },
    ]);
    expect(result.runtime_config.output_schema).toEqual(schema);
    expect(JSON.stringify(result.runtime_config)).not.toContain('canary-backup-key-77');
    expect(openTaskVault(result, keyring)).toMatchObject({
      [modelApiKeyVaultEntry(0)]: CANARY.MODEL_KEY,
      [modelApiKeyVaultEntry(1)]: 'canary-backup-key-77',
    });
  });

  it('when the submission gives its own output schema, it replaces the agent’s for that task', async () => {
    const agentSchema = { type: 'object', required: ['a'] };
    const taskSchema = { type: 'object', required: ['b'] };
    const world = { ...fullWorld, agents: [qichachaAgent({ output_schema: agentSchema })] };
    const task = { ...receivedTask('company_research'), output_schema: taskSchema };
    const result = assembled(await assembleTask(task, sources(world)));
    expect(result.runtime_config.output_schema).toEqual(taskSchema);
  });

  it('when the agent’s fallback model’s credential is missing, the task fails with CREDENTIALS_MISSING naming it', async () => {
    const agent = qichachaAgent({
      model: [
        { model_name: 'demo-model', base_url: 'http://127.0.0.1:9/v1', api_key_credential: 'MODEL_KEY' },
        { model_name: 'backup-model', base_url: 'http://127.0.0.1:10/v1', api_key_credential: 'BACKUP_KEY' },
      ],
    });
    const failure = failed(
      await assembleTask(receivedTask('company_research'), sources({ ...fullWorld, agents: [agent] })),
    );
    expect(failure.code).toBe('CREDENTIALS_MISSING');
    expect(failure.message).toContain('BACKUP_KEY');
  });

  it('no credential value appears anywhere in the assembled task outside the sealed vault', async () => {
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(fullWorld)));
    const text = JSON.stringify(result);
    for (const value of Object.values(CANARY)) expect(text).not.toContain(value);
  });

  it('credentials of tools the agent is not bound to stay out of the vault', async () => {
    const task = receivedTask('company_research');
    const result = assembled(await assembleTask(task, sources(fullWorld)));
    const vault = openTaskVault(result, keyring);
    expect(vault).not.toHaveProperty('WEATHER_TOKEN');
  });

  it('the agent’s system prompt is prepended to the task’s messages', async () => {
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(fullWorld)));
    expect(result.input.messages).toEqual([
      { role: 'system', content: 'You research companies. Use the tools.' },
      { role: 'user', content: 'Who runs ByteDance?' },
    ]);
  });

  it('an agent without a system prompt leaves the messages as submitted', async () => {
    const { system_prompt: _prompt, ...agent } = qichachaAgent();
    const world = { ...fullWorld, agents: [agent] };
    const result = assembled(await assembleTask(receivedTask('company_research'), sources(world)));
    expect(result.input.messages).toEqual([{ role: 'user', content: 'Who runs ByteDance?' }]);
  });

  it('a keyless model with tools that need no credentials gets an empty sealed vault', async () => {
    const agent = qichachaAgent({
      model: { model_name: 'local', base_url: 'http://127.0.0.1:9/v1' },
      tools: ['get_weather'],
    });
    const keyless = weatherTool({ auth_config: undefined });
    const task = receivedTask('company_research');
    const result = assembled(await assembleTask(task, sources({ agents: [agent], tools: [keyless] })));
    expect(openTaskVault(result, keyring)).toEqual({});
  });

  it('a tool bound twice is included once', async () => {
    const agent = qichachaAgent({ tools: ['search_company_basic', 'get_weather', 'search_company_basic'] });
    const result = assembled(
      await assembleTask(receivedTask('company_research'), sources({ ...fullWorld, agents: [agent] })),
    );
    expect(result.runtime_config.tools.map((tool) => tool.name)).toEqual([
      'search_company_basic',
      'get_weather',
    ]);
  });
});

describe('approval rules of an agent’s tool bindings', () => {
  it('the binding’s rules join the tool’s own: the task’s tool asks for approval when either matches', async () => {
    const tool = {
      ...weatherTool(),
      approval: { when: [{ arg: 'city', op: 'eq' as const, value: 'Paris' }], timeout_ms: 60_000 },
    };
    const agent = qichachaAgent({
      tools: ['get_weather'],
      tool_approvals: {
        get_weather: { when: [{ arg: 'days', op: 'gt', value: 3 }], reason: 'long forecasts cost' },
      },
    });
    const result = assembled(
      await assembleTask(
        receivedTask('company_research'),
        sources({ ...fullWorld, agents: [agent], tools: [tool] }),
      ),
    );
    expect(result.runtime_config.tools[0]?.approval).toEqual({
      when: [
        { arg: 'city', op: 'eq', value: 'Paris' },
        { arg: 'days', op: 'gt', value: 3 },
      ],
      reason: 'long forecasts cost',
      timeout_ms: 60_000,
    });
  });

  it('a binding that asks for every call makes every call need approval, whatever the tool’s conditions', async () => {
    const tool = {
      ...weatherTool(),
      approval: { when: [{ arg: 'city', op: 'eq' as const, value: 'Paris' }] },
    };
    const agent = qichachaAgent({ tools: ['get_weather'], tool_approvals: { get_weather: {} } });
    const result = assembled(
      await assembleTask(
        receivedTask('company_research'),
        sources({ ...fullWorld, agents: [agent], tools: [tool] }),
      ),
    );
    expect(result.runtime_config.tools[0]?.approval).toEqual({});
  });

  it('a binding rule for a tool without a policy becomes its policy; unbound rules change nothing', async () => {
    const agent = qichachaAgent({
      tools: ['get_weather', 'search_company_basic'],
      tool_approvals: { get_weather: { reason: 'ask first' } },
    });
    const result = assembled(
      await assembleTask(receivedTask('company_research'), sources({ ...fullWorld, agents: [agent] })),
    );
    expect(result.runtime_config.tools.map((t) => t.approval)).toEqual([{ reason: 'ask first' }, undefined]);
  });
});

describe('agents binding MCP servers', () => {
  const github: McpServerDefinitionInput = {
    name: 'github',
    description: 'GitHub issues',
    transport: { type: 'streamable-http', url: 'https://mcp.example.com/mcp' },
    auth: { type: 'bearer', token_source: 'GITHUB_TOKEN' },
    tool_filter: { allow: ['create_issue'] },
    tool_prefix: 'gh_',
  };
  const mcpAgent = { ...qichachaAgent(), workflow_id: 'mcp_agent', tools: [], mcp_servers: ['github'] };

  it('the task carries the bound server (connection, filter, prefix) and its credential only inside the vault', async () => {
    const world: World = {
      ...fullWorld,
      agents: [mcpAgent],
      mcpServers: [github],
      credentials: { ...fullWorld.credentials, GITHUB_TOKEN: 'canary-github-token-1' },
    };
    const result = assembled(await assembleTask(receivedTask('mcp_agent'), sources(world)));
    expect(result.runtime_config.mcp_servers).toEqual([
      {
        name: 'github',
        transport: github.transport,
        auth: github.auth,
        tool_filter: github.tool_filter,
        tool_prefix: 'gh_',
      },
    ]);
    expect(openTaskVault(result, keyring)).toEqual({
      GITHUB_TOKEN: 'canary-github-token-1',
      [MODEL_API_KEY_VAULT_ENTRY]: CANARY.MODEL_KEY,
    });
    expect(JSON.stringify(result)).not.toContain('canary-github-token-1');
  });

  it('when the server is pointed elsewhere after sealing, the vault no longer opens', async () => {
    const world: World = {
      ...fullWorld,
      agents: [mcpAgent],
      mcpServers: [github],
      credentials: { ...fullWorld.credentials, GITHUB_TOKEN: 't' },
    };
    const result = assembled(await assembleTask(receivedTask('mcp_agent'), sources(world)));
    const [server] = result.runtime_config.mcp_servers ?? [];
    if (server === undefined) throw new Error('no server in the task');
    const moved = {
      ...result,
      runtime_config: {
        ...result.runtime_config,
        mcp_servers: [
          { ...server, transport: { type: 'streamable-http' as const, url: 'https://evil.example/mcp' } },
        ],
      },
    };
    expect(() => openTaskVault(moved, keyring)).toThrow(VaultTamperedError);
  });

  it('when the user lacks the server’s credential, the task fails with CREDENTIALS_MISSING naming it', async () => {
    const world: World = { ...fullWorld, agents: [mcpAgent], mcpServers: [github] };
    const failure = failed(await assembleTask(receivedTask('mcp_agent'), sources(world)));
    expect(failure.code).toBe('CREDENTIALS_MISSING');
    expect(failure.detail).toMatchObject({ missing: ['GITHUB_TOKEN'] });
  });

  it('when the bound server is not defined, the task fails with NOT_FOUND naming it', async () => {
    const world: World = { ...fullWorld, agents: [mcpAgent] };
    const failure = failed(await assembleTask(receivedTask('mcp_agent'), sources(world)));
    expect(failure.code).toBe('NOT_FOUND');
    expect(failure.detail).toEqual({ workflow_id: 'mcp_agent', missing_mcp_servers: ['github'] });
  });
});

describe('agents calling agents (sub_agents)', () => {
  const helper = qichachaAgent({
    workflow_id: 'fact.checker',
    description: 'Checks a fact and answers true or false',
    tools: [],
  });

  it('each listed sub-agent becomes an AGENT tool agent_<workflow_id> (function-name safe) taking {input}, described by the sub-agent, after the bound tools', async () => {
    const world: World = {
      ...fullWorld,
      agents: [qichachaAgent({ sub_agents: ['fact.checker', 'fact.checker'] }), helper],
    };
    const task = assembled(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(task.runtime_config.tools.map((tool) => tool.name)).toEqual([
      'search_company_basic',
      expect.stringMatching(/^agent_fact_checker_[0-9a-f]+$/),
    ]);
    const agentTool = task.runtime_config.tools[1]!;
    expect(agentTool).toMatchObject({
      type: 'AGENT',
      workflow_id: 'fact.checker',
      description: 'Checks a fact and answers true or false',
      parameters: { type: 'object', required: ['input'], properties: { input: { type: 'string' } } },
    });
  });

  it('when a listed sub-agent does not exist in the account or the shared catalogue, the task fails with NOT_FOUND naming it', async () => {
    const world: World = {
      ...fullWorld,
      agents: [qichachaAgent({ sub_agents: ['fact.checker', 'ghost'] }), helper],
    };
    const failure = failed(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(failure.code).toBe('NOT_FOUND');
    expect(failure.message).toContain('ghost');
    expect(failure.detail).toEqual({
      workflow_id: 'company_research',
      missing_sub_agents: ['ghost'],
      clashing_tool_names: [],
    });
  });

  it('when a bound tool already has the name of a sub-agent tool, the task fails naming the clash', async () => {
    const clashing = { ...weatherTool(), name: 'agent_helper' };
    const world: World = {
      ...fullWorld,
      tools: [qichachaTool(), clashing],
      agents: [
        qichachaAgent({ tools: ['search_company_basic', 'agent_helper'], sub_agents: ['helper'] }),
        qichachaAgent({ workflow_id: 'helper' }),
      ],
    };
    const failure = failed(await assembleTask(receivedTask('company_research'), sources(world)));

    expect(failure.detail).toMatchObject({ missing_sub_agents: [], clashing_tool_names: ['agent_helper'] });
  });
});

describe('tasks that cannot be assembled', () => {
  it('when no agent has the workflow_id, the task fails with NOT_FOUND naming it', async () => {
    const failure = failed(await assembleTask(receivedTask('no_such_agent'), sources(fullWorld)));
    expect(failure.toEventData()).toEqual({
      code: 'NOT_FOUND',
      message: expect.stringContaining('no_such_agent'),
      retryable: false,
      detail: { workflow_id: 'no_such_agent' },
    });
  });

  it('when a bound tool is not in the registry, the task fails with NOT_FOUND naming that tool', async () => {
    const agent = qichachaAgent({ tools: ['search_company_basic', 'vanished_tool'] });
    const failure = failed(
      await assembleTask(receivedTask('company_research'), sources({ ...fullWorld, agents: [agent] })),
    );
    expect(failure.code).toBe('NOT_FOUND');
    expect(failure.message).toContain('vanished_tool');
    expect(failure.message).not.toContain('search_company_basic');
    expect(failure.detail).toEqual({
      workflow_id: 'company_research',
      missing: ['vanished_tool'],
      disabled: [],
    });
  });

  it('when a bound tool is disabled in the registry, the task fails with NOT_FOUND naming it as disabled', async () => {
    const disabled = disabledQichachaTool();
    const failure = failed(
      await assembleTask(receivedTask('company_research'), sources({ ...fullWorld, tools: [disabled] })),
    );
    expect(failure.code).toBe('NOT_FOUND');
    expect(failure.message).toContain('search_company_basic (disabled)');
    expect(failure.detail).toEqual({
      workflow_id: 'company_research',
      missing: [],
      disabled: ['search_company_basic'],
    });
  });

  it('when the user lacks a tool credential and the model key, the task fails with CREDENTIALS_MISSING naming both, never a value', async () => {
    const world = { ...fullWorld, credentials: { QCC_KEY: CANARY.QCC_KEY } };
    const failure = failed(await assembleTask(receivedTask('company_research'), sources(world)));
    const data = failure.toEventData();
    expect(data.code).toBe('CREDENTIALS_MISSING');
    expect(data.detail).toEqual({
      missing: ['MODEL_KEY', 'QCC_SECRET'],
      account_id: ACCOUNT,
      user_id: USER,
      looked_in: ['user', 'account'],
    });
    expect(data.message).toContain(`user "${USER}" of account "${ACCOUNT}"`);
    expect(data.message).toContain('account-wide credentials');
    expect(data.message).toContain('MODEL_KEY');
    expect(data.message).toContain('QCC_SECRET');
    expect(JSON.stringify(data)).not.toContain(CANARY.QCC_KEY);
  });

  it('credentials stored for another user do not count', async () => {
    const failure = failed(
      await assembleTask(receivedTask('company_research', { userId: 'someone-else' }), sources(fullWorld)),
    );
    expect(failure.code).toBe('CREDENTIALS_MISSING');
    expect(failure.detail).toMatchObject({
      missing: ['MODEL_KEY', 'QCC_KEY', 'QCC_SECRET'],
      user_id: 'someone-else',
    });
  });
});

describe('pre-assembled tasks', () => {
  it('a received task that already carries a sealed runtime_config passes through unchanged, without registry lookups', async () => {
    const base = receivedTask('ruoyi_flow');
    const runtimeConfig = {
      model: {
        provider: 'openai',
        model_name: 'upstream',
        base_url: 'http://127.0.0.1:9/v1',
        tool_protocol: 'native',
      },
      tools: [weatherTool()],
      vault: sealVault({ WEATHER_TOKEN: CANARY.WEATHER_TOKEN }, 'sealed by the gateway', {
        kid: executorKey.kid,
        publicKey: executorKey.publicKey,
      }),
    };
    const preAssembled = ReceivedTask.parse({
      ...base,
      runtime_config: runtimeConfig,
      limits: { max_steps: 3 },
    });
    const untouchable = (): never => {
      throw new Error('a pre-assembled task must not be looked up');
    };
    const noLookups: AssemblySources = {
      agents: { resolve: untouchable },
      tools: { resolve: untouchable },
      credentials: { resolve: untouchable },
      sealFor: { kid: executorKey.kid, publicKey: executorKey.publicKey },
    };

    const result = assembled(await assembleTask(preAssembled, noLookups));
    expect(result).toEqual({
      task_meta: base.task_meta,
      input: base.input,
      runtime_config: runtimeConfig,
      limits: { max_steps: 3 },
    });
  });

  it('a pre-assembled task without limits gets the default limits', async () => {
    const base = receivedTask('ruoyi_flow');
    const preAssembled = ReceivedTask.parse({
      ...base,
      runtime_config: {
        model: { model_name: 'upstream', base_url: 'http://127.0.0.1:9/v1' },
        tools: [],
        vault: sealVault({}, 'sealed by the gateway', {
          kid: executorKey.kid,
          publicKey: executorKey.publicKey,
        }),
      },
    });
    const result = assembled(await assembleTask(preAssembled, sources({})));
    expect(result.limits).toEqual(TaskLimits.parse({}));
  });
});

function disabledQichachaTool(): ToolDefinition {
  const tool = qichachaTool();
  if (tool.type !== 'HTTP') throw new Error('the qichacha fixture is an HTTP tool');
  return { ...tool, status: 'disabled' };
}

describe('the budget of an assembled task', () => {
  const world = (budget: { max_total_tokens?: number; max_cost_usd?: number }): World => ({
    ...fullWorld,
    agents: [qichachaAgent(budget)],
  });
  const submitted = (limits: { max_total_tokens?: number; max_cost_usd?: number }) =>
    ReceivedTask.parse({ ...receivedTask('company_research'), limits });

  it("when the agent and the submission both set a budget, the task's limits have the smaller of each", async () => {
    const task = submitted({ max_total_tokens: 5_000, max_cost_usd: 2 });
    const result = assembled(
      await assembleTask(task, sources(world({ max_total_tokens: 8_000, max_cost_usd: 0.5 }))),
    );
    expect(result.limits).toEqual({
      max_steps: 7,
      deadline_ms: 120_000,
      max_total_tokens: 5_000,
      max_cost_usd: 0.5,
    });
  });

  it("when only one of them sets a budget, that one applies; the submission's max_steps does not replace the agent's", async () => {
    const fromAgent = assembled(
      await assembleTask(receivedTask('company_research'), sources(world({ max_total_tokens: 8_000 }))),
    );
    expect(fromAgent.limits).toEqual({ max_steps: 7, deadline_ms: 120_000, max_total_tokens: 8_000 });
    const fromSubmission = assembled(
      await assembleTask(
        ReceivedTask.parse({
          ...receivedTask('company_research'),
          limits: { max_steps: 99, max_cost_usd: 1 },
        }),
        sources(world({})),
      ),
    );
    expect(fromSubmission.limits).toEqual({ max_steps: 7, deadline_ms: 120_000, max_cost_usd: 1 });
  });
});

describe('assembling a task whose agent binds an A2A tool', () => {
  const a2aTool = ToolDefinition.parse({
    type: 'A2A',
    name: 'ask_travel',
    card_url: 'https://agents.example/.well-known/agent-card.json',
    auth: { credential: 'TRAVEL_KEY' },
  });
  const world = (credentials: Record<string, string>): World => ({
    agents: [qichachaAgent({ tools: ['ask_travel'] })],
    tools: [a2aTool],
    credentials: { MODEL_KEY: CANARY.MODEL_KEY, ...credentials },
  });

  it("the tool's credential goes into the sealed vault, and the tool as stored into the task", async () => {
    const result = assembled(
      await assembleTask(receivedTask('company_research'), sources(world({ TRAVEL_KEY: 'travel-secret' }))),
    );
    expect(result.runtime_config.tools).toEqual([a2aTool]);
    expect(JSON.stringify(result.runtime_config.tools)).not.toContain('travel-secret');
    expect(openTaskVault(result, keyring)).toMatchObject({ TRAVEL_KEY: 'travel-secret' });
  });

  it("when the user lacks the tool's credential, the task fails with CREDENTIALS_MISSING naming it", async () => {
    const failure = failed(await assembleTask(receivedTask('company_research'), sources(world({}))));
    expect(failure.code).toBe('CREDENTIALS_MISSING');
    expect(failure.detail).toMatchObject({ missing: ['TRAVEL_KEY'] });
  });
});

describe('a task pinned to a version whose tools changed since', () => {
  /** Sources whose agent keeps version 4, recording `digests` for its tools. */
  const pinnedWorld = (digests: Record<string, string | null> | undefined): AssemblySources => {
    const base = sources(fullWorld);
    const agent = AgentDefinition.parse(qichachaAgent());
    return {
      ...base,
      agents: {
        ...base.agents,
        resolveVersion: async () => ({
          agent,
          version: { version: 4, digest: `sha256:${'4'.repeat(64)}` },
          ...(digests === undefined ? {} : { toolDigests: digests }),
        }),
      },
    };
  };
  const pinnedTask = () => {
    const task = receivedTask('company_research');
    return { ...task, task_meta: { ...task.task_meta, agent_version: 4 } };
  };

  it('when the bound tool is as the version recorded it, the pinned task is assembled', async () => {
    const digests = { search_company_basic: toolDigest(qichachaTool()) };
    const result = assembled(await assembleTask(pinnedTask(), pinnedWorld(digests)));
    expect(result.task_meta.agent_version).toBe(4);
  });

  it.each([
    ['rewritten since', { search_company_basic: toolDigest(weatherTool()) }],
    ['had no tool when the version was written', { search_company_basic: null }],
    ['was not recorded', {}],
  ])(
    'when the bound tool %s, the task ends AGENT_VERSION_TOOLS_CHANGED naming it, not retryable',
    async (_what, digests) => {
      const failure = failed(await assembleTask(pinnedTask(), pinnedWorld(digests)));
      expect(failure.toEventData()).toEqual({
        code: 'AGENT_VERSION_TOOLS_CHANGED',
        message: expect.stringContaining('search_company_basic'),
        retryable: false,
        detail: { workflow_id: 'company_research', version: 4, tools: ['search_company_basic'] },
      });
    },
  );

  it('when the version recorded no tool digests (written before they existed), it is not checked', async () => {
    assembled(await assembleTask(pinnedTask(), pinnedWorld(undefined)));
  });

  it('when the task pins nothing, the current tools run whatever a version recorded', async () => {
    assembled(
      await assembleTask(receivedTask('company_research'), pinnedWorld({ search_company_basic: null })),
    );
  });
});
