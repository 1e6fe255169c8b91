// Test helper: the paths (as describeZodError writes them) at which a schema rejects a value.
import type { z } from 'zod';
import { describeZodError } from '../errors.js';

export function rejectionPaths(schema: z.ZodType, value: unknown): string[] {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected the value to be rejected, but it parsed');
  return describeZodError(result.error).detail.issues.map((issue) => issue.path);
}
