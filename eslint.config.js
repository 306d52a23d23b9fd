// Lint: the promise rules that the type-check cannot express. Every promise is awaited,
// returned or handled (no-floating-promises), and none is passed where a callback's result
// is ignored (no-misused-promises). Type-aware over the whole tree (tests and benches too).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'test/cluster/**', '**/*.js', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // tap queues subtests itself and fails the file when one rejects: `t.test(...)` at
      // the top level of a test file is the framework's own pattern, not a lost promise.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: ['@tapjs/core', '@tapjs/test'].map((pkg) => ({ from: 'package', package: pkg, name: ['test', 'skip', 'todo', 'only'] })),
      }],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
