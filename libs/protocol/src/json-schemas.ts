// JSON Schema documents of the public payloads, for upstreams that do not speak TypeScript. Checked in under
// `schemas/` by `npm run schemas`; a test fails when they drift from the zod schemas. Bodies others send us are
// described as accepted (`io: input`: defaults optional, lenient forms); bodies we emit as produced.
import { z } from 'zod';
import { AgentDefinition } from './agent.js';
import { CancelSignal } from './control.js';
import { DeadLetter, DeadLetterList, DeadLetterRedriveReply, DeadLetterView } from './dead-letter.js';
import { ErrorBody } from './errors.js';
import { TaskEvent } from './events.js';
import {
  AgentListReply,
  CallerReply,
  PreAssembledTaskRequest,
  StreamTokenReply,
  SubmitTaskReply,
  SubmitTaskRequest,
  TaskListReply,
} from './gateway.js';
import { ActionRecallRequest, ActionRecallResponse, RecallRequest } from './recall.js';
import { AssembledTask, ClearTaskPayload, ReceivedTask } from './task.js';
import { TaskStatusRecord } from './task-status.js';
import { ToolDefinition } from './tools/canonical.js';
import { DynamicTool } from './tools/dynamic-tool.js';
import { HttpPlugin } from './tools/http-plugin.js';
import { PayloadTool } from './tools/payload-tool.js';
import { ToolJson } from './tools/tool-json.js';

interface SchemaEntry {
  readonly title: string;
  readonly description: string;
  readonly schema: z.ZodType;
  readonly io: 'input' | 'output';
}

const ENTRIES: Readonly<Record<string, SchemaEntry>> = {
  'submit-task-request.json': {
    title: 'SubmitTaskRequest',
    description: 'POST /v1/tasks and mesh.gateway.submit: run an agent on chat messages.',
    schema: SubmitTaskRequest,
    io: 'input',
  },
  'submit-task-reply.json': {
    title: 'SubmitTaskReply',
    description: 'Answer to an accepted submission (HTTP 202 or NATS reply).',
    schema: SubmitTaskReply,
    io: 'output',
  },
  'stream-token-reply.json': {
    title: 'StreamTokenReply',
    description: "POST /v1/tasks/{id}/stream-token: a short-lived token opening one task's event stream.",
    schema: StreamTokenReply,
    io: 'output',
  },
  'task-list-reply.json': {
    title: 'TaskListReply',
    description: "GET /v1/tasks: the account's most recently updated tasks, newest first.",
    schema: TaskListReply,
    io: 'output',
  },
  'agent-list-reply.json': {
    title: 'AgentListReply',
    description: 'GET /v1/agents: the agents a task of the account may name.',
    schema: AgentListReply,
    io: 'output',
  },
  'caller-reply.json': {
    title: 'CallerReply',
    description: 'GET /v1/caller: what kind of key the caller presented, and for which account.',
    schema: CallerReply,
    io: 'output',
  },
  'pre-assembled-task-request.json': {
    title: 'PreAssembledTaskRequest',
    description:
      'Seed 001 payload submitted by a trusted upstream (vault in clear), plus an idempotency key.',
    schema: PreAssembledTaskRequest,
    io: 'input',
  },
  'clear-task-payload.json': {
    title: 'ClearTaskPayload',
    description: 'Seed 001 self-contained task payload with its vault in clear.',
    schema: ClearTaskPayload,
    io: 'input',
  },
  'received-task.json': {
    title: 'ReceivedTask',
    description: 'mesh.tasks.received.<account>: a submitted task before assembly.',
    schema: ReceivedTask,
    io: 'output',
  },
  'assembled-task.json': {
    title: 'AssembledTask',
    description: 'mesh.tasks.assembled.<account>: a runnable task; sealed vault, no key in clear.',
    schema: AssembledTask,
    io: 'output',
  },
  'http-plugin.json': {
    title: 'HttpPlugin',
    description: 'Seed 000 HTTP plugin definition.',
    schema: HttpPlugin,
    io: 'input',
  },
  'payload-tool.json': {
    title: 'PayloadTool',
    description: 'Seed 001 runtime_config.tools[] entry.',
    schema: PayloadTool,
    io: 'input',
  },
  'tool-json.json': {
    title: 'ToolJson',
    description: 'Seed 003 *.tool.json direct-service tool metadata.',
    schema: ToolJson,
    io: 'input',
  },
  'dynamic-tool.json': {
    title: 'DynamicTool',
    description: 'Seed 004 _dynamic_tools[] entry.',
    schema: DynamicTool,
    io: 'input',
  },
  'tool-definition.json': {
    title: 'ToolDefinition',
    description: 'Canonical tool definition of the mesh (KV mesh_tools, assembled tasks).',
    schema: ToolDefinition,
    io: 'input',
  },
  'task-event.json': {
    title: 'TaskEvent',
    description: 'One event of a task: mesh.events.<account>.<trace_id> and SSE /v1/tasks/{id}/events.',
    schema: TaskEvent,
    io: 'output',
  },
  'dead-letter.json': {
    title: 'DeadLetter',
    description:
      'mesh.dead.<account>.<trace_id>: a task that ran out of deliveries (no runtime_config, no vault).',
    schema: DeadLetter,
    io: 'output',
  },
  'dead-letter-view.json': {
    title: 'DeadLetterView',
    description: 'GET /v1/admin/dead-letters/{trace_id}: a dead letter with a summary of its input.',
    schema: DeadLetterView,
    io: 'output',
  },
  'dead-letter-list.json': {
    title: 'DeadLetterList',
    description: "GET /v1/admin/dead-letters: the account's dead letters, newest first.",
    schema: DeadLetterList,
    io: 'output',
  },
  'dead-letter-redrive-reply.json': {
    title: 'DeadLetterRedriveReply',
    description: 'POST /v1/admin/dead-letters/{trace_id}/redrive: the new task submitted in its place.',
    schema: DeadLetterRedriveReply,
    io: 'output',
  },
  'task-status-record.json': {
    title: 'TaskStatusRecord',
    description: 'Task status: KV mesh_tasks and GET /v1/tasks/{id}.',
    schema: TaskStatusRecord,
    io: 'output',
  },
  'cancel-signal.json': {
    title: 'CancelSignal',
    description: 'mesh.control.cancel.<trace_id>.',
    schema: CancelSignal,
    io: 'output',
  },
  'error-body.json': {
    title: 'ErrorBody',
    description: 'Every error answer of the mesh (HTTP, NATS replies, seed 004).',
    schema: ErrorBody,
    io: 'output',
  },
  'action-recall-request.json': {
    title: 'ActionRecallRequest',
    description: 'Seed 004 recall HTTP body (kn_id and at_id are path parameters).',
    schema: ActionRecallRequest,
    io: 'input',
  },
  'recall-request.json': {
    title: 'RecallRequest',
    description: 'mesh.recall.actions request.',
    schema: RecallRequest,
    io: 'input',
  },
  'action-recall-response.json': {
    title: 'ActionRecallResponse',
    description: 'Seed 004 recall answer: _dynamic_tools.',
    schema: ActionRecallResponse,
    io: 'output',
  },
  'agent-definition.json': {
    title: 'AgentDefinition',
    description: 'An agent/workflow as kept in KV mesh_agents.',
    schema: AgentDefinition,
    io: 'input',
  },
};

export type JsonSchemaDocument = Record<string, unknown>;

/** File name → JSON Schema document (draft 2020-12), in a stable order. */
export function buildJsonSchemas(): Record<string, JsonSchemaDocument> {
  const documents: Record<string, JsonSchemaDocument> = {};
  for (const [fileName, entry] of Object.entries(ENTRIES).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const { $schema, ...body } = z.toJSONSchema(entry.schema, { io: entry.io, target: 'draft-2020-12' });
    documents[fileName] = { $schema, title: entry.title, description: entry.description, ...body };
  }
  return documents;
}

/** How a document is written to disk; the staleness test compares with exactly this. */
export function serialiseJsonSchema(document: JsonSchemaDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
