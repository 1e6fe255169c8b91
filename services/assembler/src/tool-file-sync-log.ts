/**
 * Log lines for a tool directory sync: each file that could not be used, with its path and reason, and
 * one summary of what changed in the registry. Operators read these to learn why a file did not apply.
 */
import type { Logger } from '@agentmesh/runtime';
import type { ToolFileSyncReport } from './tool-file-sync.js';

export function logToolFileSync(log: Logger, dir: string, report: ToolFileSyncReport): void {
  if (!report.listed) {
    const reason = report.rejected[0]?.reason;
    log.warn({ tools_dir: dir, reason }, 'tools directory cannot be listed; registry left as it is');
    return;
  }
  for (const { path, reason } of report.rejected) {
    log.warn({ tools_dir: dir, path, reason }, 'tool file rejected; skipped');
  }
  for (const { path, name } of report.retained) {
    log.warn(
      { tools_dir: dir, path, tool: name },
      'tool file is invalid now; the tool keeps its last good version',
    );
  }
  for (const { path, name, winner } of report.shadowed) {
    log.warn(
      { tools_dir: dir, path, tool: name, winner },
      'tool file shadowed by an earlier file of the same name',
    );
  }
  for (const { path, name } of report.kept) {
    log.debug({ tools_dir: dir, path, tool: name }, 'tool is managed through the API; file not applied');
  }
  if (report.contended.length > 0) {
    log.warn(
      { tools_dir: dir, tools: report.contended },
      'tools changed by other writers meanwhile; left to the next sync',
    );
  }
  const changed = report.added.length + report.updated.length + report.removed.length;
  log[changed > 0 ? 'info' : 'debug'](
    {
      tools_dir: dir,
      added: report.added.map(({ name }) => name),
      updated: report.updated.map(({ name }) => name),
      removed: report.removed.map(({ name }) => name),
      unchanged: report.unchanged.length,
      kept: report.kept.length,
      shadowed: report.shadowed.length,
      rejected: report.rejected.length,
    },
    'tool registry synchronised with the tools directory',
  );
}
