// Lint: typescript-eslint's recommended rules plus the layer rule from DESIGN §4 —
// imports flow core ← storage ← (runtime, cli, dashboard); core is pure (no node:*, no packages).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/node_modules/**', 'bench/results/**', 'demo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      // why: handler payloads and driver rows are genuinely untyped at the boundary
      '@typescript-eslint/no-explicit-any': 'warn',
      // one concern per file: a file that outgrows a screenful or two is split
      'max-lines': ['error', { max: 300, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    ignores: ['src/core/**/*.test.ts'],
    rules: restrict([
      { group: ['node:*', 'fs', 'path', 'os', 'crypto', 'child_process', 'net'], message: 'core is pure: no I/O modules' },
      { group: ['../storage/*', '../runtime/*', '../cli/*', '../dashboard/*'], message: 'core imports nothing outside core' },
      { regex: '^[a-z@]', message: 'core depends on no package (types from @standard-schema/spec excepted)', allowTypeImports: true },
    ]),
  },
  {
    files: ['src/storage/**/*.ts'],
    rules: restrict([{ group: ['**/runtime/*', '**/cli/*', '**/dashboard/*'], message: 'storage knows only core' }]),
  },
  {
    files: ['src/storage/*/**/*.ts'],
    rules: restrict([
      { group: ['**/runtime/*', '**/cli/*', '**/dashboard/*'], message: 'storage knows only core' },
      { group: ['../memory/*', '../sqlite/*', '../postgres/*', '../mysql/*', '../open.js'], message: 'an adapter knows only core and its own folder' },
    ]),
  },
  {
    files: ['src/runtime/**/*.ts'],
    rules: restrict([{ group: ['**/storage/*', '**/cli/*', '**/dashboard/*'], message: 'runtime talks to storage through the core contract only' }]),
  },
  {
    files: ['src/observe/**/*.ts'],
    rules: restrict([{ group: ['**/storage/*', '**/cli/*', '**/dashboard/*'], message: 'observe watches the runtime and reads storage through the core contract only' }]),
  },
  {
    files: ['src/dashboard/**/*.ts'],
    rules: restrict([{ group: ['**/storage/*', '**/cli/*'], message: 'the dashboard uses the client admin API, never SQL' }]),
  },
  {
    // plain JS scripts run on Node: its globals exist
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
  },
  {
    files: ['test/**/*.ts', 'examples/**/*.ts', 'bench/**/*.ts', 'scripts/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
