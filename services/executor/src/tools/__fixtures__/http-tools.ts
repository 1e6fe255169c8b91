// Builders for the HTTP tools the tests run. Plain data, no test-kit imports: this file is compiled with the
// package (the build excludes only `*.test.ts`).
import { readFileSync } from 'node:fs';
import { fromHttpPlugin, HttpPlugin, type HttpTool, type HttpToolExecution } from '@agentmesh/protocol';

/** An HTTP tool with an open parameters schema; `execution` and the rest as given. */
export function httpTool(
  execution: HttpToolExecution,
  extra: Partial<Omit<HttpTool, 'execution'>> = {},
): HttpTool {
  return {
    type: 'HTTP',
    name: 'test_tool',
    description: 'a tool under test',
    parameters: { type: 'object', properties: {} },
    execution,
    ...extra,
  };
}

/** Seed 000's complete example plugin (企查查 keyword search) as the protocol's fixtures hold it. */
export function seed000Plugin(): HttpPlugin {
  const file = new URL(
    '../../../../../libs/protocol/src/__fixtures__/seeds/000-s2-plugin.json',
    import.meta.url,
  );
  return HttpPlugin.parse(JSON.parse(readFileSync(file, 'utf8')));
}

/** Seed 000's plugin converted to the canonical tool, its `base_url` moved onto `origin` (same path). */
export function seed000ToolAt(origin: string): HttpTool {
  const plugin = seed000Plugin();
  const path = new URL(plugin.execution.base_url).pathname;
  return fromHttpPlugin({ ...plugin, execution: { ...plugin.execution, base_url: `${origin}${path}` } });
}
