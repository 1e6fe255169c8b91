import { describe, expect, it } from 'vitest';
import { readMalformedTaskIdentity } from './malformed-task.js';

const traceId = 'a'.repeat(32);
const bytes = (value: unknown) =>
  new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

describe('readMalformedTaskIdentity', () => {
  it('takes the account from the subject and the trace and workflow ids from what of the payload parses', () => {
    expect(
      readMalformedTaskIdentity(
        'mesh.tasks.received.acme',
        bytes({ task_meta: { trace_id: traceId, workflow_id: 'w' }, input: 42 }),
      ),
    ).toEqual({ accountId: 'acme', traceId, workflowId: 'w' });
  });

  it('when the payload names another account than its subject, nothing can be told', () => {
    expect(
      readMalformedTaskIdentity(
        'mesh.tasks.assembled.acme',
        bytes({ task_meta: { trace_id: traceId, account_id: 'globex' } }),
      ),
    ).toBeUndefined();
  });

  it('when the subject is not a task subject, the payload is not JSON, or the trace id is not one, nothing can be told', () => {
    expect(
      readMalformedTaskIdentity('mesh.other.acme', bytes({ task_meta: { trace_id: traceId } })),
    ).toBeUndefined();
    expect(readMalformedTaskIdentity('mesh.tasks.received.acme', bytes('{"task_meta":'))).toBeUndefined();
    expect(
      readMalformedTaskIdentity('mesh.tasks.received.acme', bytes({ task_meta: { trace_id: 'x' } })),
    ).toBeUndefined();
  });

  it('an invalid workflow id is left out rather than trusted', () => {
    expect(
      readMalformedTaskIdentity(
        'mesh.tasks.received.acme',
        bytes({ task_meta: { trace_id: traceId, workflow_id: 'no spaces allowed' } }),
      ),
    ).toEqual({ accountId: 'acme', traceId });
  });
});
