// Core NATS control messages. `mesh.control.cancel.<account>.<trace_id>` tells whichever executor runs the task
// to stop; the task then ends with an `error` event coded CANCELLED.
import { z } from 'zod';
import { IsoDateTime } from './ids.js';
import { AccountId } from './names.js';
import { TraceId } from './trace-id.js';

export const CancelSignal = z.object({
  account_id: AccountId,
  trace_id: TraceId,
  requested_at: IsoDateTime,
  reason: z.string().max(1024).optional(),
});
export type CancelSignal = z.infer<typeof CancelSignal>;
