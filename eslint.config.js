// Lint: the promise rules that the type-check cannot express. Every promise is awaited,
// returned or handled (no-floating-promises), and none is passed where a callback's result
// is ignored (no-misused-promises). Type-aware over the whole tree (tests and benches too).
// And functions of at most 80 lines (blank lines and comments not counted): longer ones are split,
// or named below with why and capped at today's length, so that none of them grows.
import tseslint from 'typescript-eslint';

const MAX_LINES = { skipBlankLines: true, skipComments: true };
const LONG_FUNCTIONS = [
  // A route table: one registration per route.
  { file: 'submit-api/routes/apps.ts', max: 176, why: 'the route table of /api/apps: one registration per route' },
  // End-to-end scenarios: one story, read top to bottom, against a real cluster or process.
  ...[
    ['test/auth/secret-key-store.test.ts', 127], ['test/certs/secret-store.test.ts', 169], ['test/cli/apps.test.ts', 99],
    ['test/dashboard/dashboard.test.ts', 81], ['test/gateway/kernel-owners.test.ts', 111], ['test/history/kubernetes-history.test.ts', 82],
    ['test/images/images.test.ts', 91], ['test/kubernetes/api-on-kubernetes.test.ts', 161], ['test/kubernetes/chart-faults.test.ts', 166],
    ['test/kubernetes/chart-install.test.ts', 93], ['test/kubernetes/controller.test.ts', 131], ['test/kubernetes/executor-drivers.test.ts', 92],
    ['test/kubernetes/real-node.test.ts', 114], ['test/kubernetes/spark-cluster.test.ts', 115], ['test/kubernetes/webhook-admission.test.ts', 124],
    ['test/packaging/pack.test.ts', 94], ['test/spark-parity/driver-pod.test.ts', 122], ['test/webhook/server.test.ts', 92],
    ['test/fixtures/admission/capture.ts', 99],
  ].map(([file, max]) => ({ file, max, why: 'an end-to-end scenario, one story' })),
];

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
      'max-lines-per-function': ['error', { max: 80, ...MAX_LINES }],
    },
  },
  ...LONG_FUNCTIONS.map(({ file, max }) => ({ files: [file], rules: { 'max-lines-per-function': ['error', { max, ...MAX_LINES }] } })),
);
