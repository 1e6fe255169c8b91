/**
 * Reads a directory of tool definition files (seed 000 plugin JSON, seed 001 tools, seed 003 `*.tool.json`,
 * seed 004 dynamic tools or canonical definitions — every `*.json`, searched recursively) into canonical
 * definitions. A file that cannot be used is returned with the reason, never thrown: one bad file must not
 * keep the others out of the registry.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import {
  describeZodError,
  importToolDefinition,
  type DetectedToolFormat,
  type ToolDefinition,
} from '@agentmesh/protocol';

/** Larger files are refused unread: tool definitions are small, and the directory is not trusted blindly. */
export const MAX_TOOL_FILE_BYTES = 1024 * 1024;

export interface ToolFile {
  /** Relative to the directory, with `/` separators. */
  path: string;
  format: DetectedToolFormat;
  tool: ToolDefinition;
}

export interface RejectedToolFile {
  path: string;
  reason: string;
}

export interface ToolFileScan {
  /**
   * False when the directory itself could not be listed: the scan then says nothing about which files
   * exist, and must not be taken to mean that every tool file was deleted.
   */
  listed: boolean;
  /** Sorted by path. */
  tools: ToolFile[];
  rejected: RejectedToolFile[];
}

export async function readToolFiles(dir: string): Promise<ToolFileScan> {
  let entries: string[];
  try {
    entries = await readdir(dir, { recursive: true });
  } catch (error) {
    return {
      listed: false,
      tools: [],
      rejected: [{ path: dir, reason: `directory cannot be read: ${errorText(error)}` }],
    };
  }
  const paths = entries
    .filter((entry) => entry.endsWith('.json'))
    .map((entry) => entry.split(sep).join('/'))
    .sort();
  const scan: ToolFileScan = { listed: true, tools: [], rejected: [] };
  for (const path of paths) {
    const outcome = await readToolFile(join(dir, path));
    if ('reason' in outcome) scan.rejected.push({ path, reason: outcome.reason });
    else scan.tools.push({ path, ...outcome });
  }
  return scan;
}

async function readToolFile(
  file: string,
): Promise<{ format: DetectedToolFormat; tool: ToolDefinition } | { reason: string }> {
  let text: string;
  try {
    const info = await stat(file);
    if (!info.isFile()) return { reason: 'not a regular file' };
    if (info.size > MAX_TOOL_FILE_BYTES) return { reason: `larger than ${MAX_TOOL_FILE_BYTES} bytes` };
    text = await readFile(file, 'utf8');
  } catch (error) {
    return { reason: `cannot be read: ${errorText(error)}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { reason: `not valid JSON: ${errorText(error)}` };
  }
  const imported = importToolDefinition(json);
  if (imported.success && imported.tool.type === 'AGENT') {
    return { reason: "an AGENT tool is not a tool file: list the agent in the calling agent's sub_agents" };
  }
  if (imported.success) return { format: imported.format, tool: imported.tool };
  if (imported.format === undefined || imported.error === undefined) {
    return {
      reason:
        'not a recognised tool format (expected seed 000 plugin JSON, a seed 001 tool, a seed 003 *.tool.json, ' +
        'a seed 004 dynamic tool or a canonical tool definition)',
    };
  }
  return { reason: `invalid ${imported.format} definition: ${describeZodError(imported.error).message}` };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
