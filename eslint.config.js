// Lint rules for the whole monorepo. Beyond typescript-eslint's recommended set, two rules keep the
// architecture honest: no import cycles, and no service importing another service (they meet on NATS).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/bundle/**', '**/node_modules/**', '**/.turbo/**', '**/coverage/**'] },
  js.configs.recommended,
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
      },
    },
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    // No cycle runs through a dependency; and @google/genai's `node/` folder is taken for a resolver
    // named "node" when import-x walks into it, which crashes the rule.
    settings: { 'import-x/ignore': ['node_modules'] },
    rules: {
      'import-x/no-cycle': ['error', { maxDepth: 10 }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object instead of a TS enum.' },
      ],
    },
  },
  {
    files: ['services/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '@agentmesh/gateway',
                '@agentmesh/assembler',
                '@agentmesh/executor',
                '@agentmesh/recall',
              ],
              message:
                'Services never import each other: they meet on NATS subjects named in @agentmesh/protocol.',
            },
            {
              group: ['../../*/src/**', '../../../services/**'],
              message: 'Services never import each other.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/protocol/src/**/*.ts'],
    ignores: ['libs/protocol/src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@agentmesh/*'], message: 'protocol imports nothing of ours.' },
            {
              group: ['node:fs', 'node:net', 'node:http', 'node:child_process', 'fs', 'net', 'http'],
              message: 'protocol holds contracts only: no I/O.',
            },
          ],
        },
      ],
    },
  },
);
