import { describe, expect, it } from 'vitest';
import { isSupportedNode, unsupportedNodeMessage } from './supported-node.js';

describe('supported Node.js', () => {
  it.each(['22.12.0', '22.20.1', '23.0.0', '24.21.0', '30.1.2'])('%s is supported', (version) => {
    expect(isSupportedNode(version)).toBe(true);
    expect(unsupportedNodeMessage(version, 'dist/index.js')).toBeUndefined();
  });

  it.each(['18.20.0', '20.20.2', '22.11.9', '21.7.3'])(
    'on %s a service is told the version it needs and how to get it',
    (version) => {
      const message = unsupportedNodeMessage(version, '/repo/services/executor/dist/index.js');
      expect(message).toContain('/repo/services/executor/dist/index.js needs Node.js >= 22.12.0');
      expect(message).toContain(`started on Node.js ${version}`);
      expect(message).toContain('npm start');
    },
  );
});
