// The linter: `npm run lint` (CI runs it). Sources are linted with type information (the rules
// that catch unhandled promises need it); tests with the rules that do not; the scripts and
// benchmarks (.mjs) with JavaScript's recommended rules.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

const sources = ['apps/*/src/**/*.ts', 'apps/*/src/**/*.tsx', 'packages/*/src/**/*.ts']
const tests = ['**/*.test.ts', '**/test/**/*.ts', 'packages/testing/src/**/*.ts']

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'packages/shared/src/generated/**', '**/*.d.ts', '**/*.d.mts'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Control characters in regular expressions are deliberate here (parsers of terminal and wire bytes).
      'no-control-regex': 'off',
      // An empty catch says: this failure changes nothing (a best-effort read or clean-up).
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: sources,
    ignores: tests,
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      // `as never` silences the type checker where a real type belongs.
      'no-restricted-syntax': [
        'error',
        { selector: 'TSAsExpression > TSNeverKeyword', message: 'No `as never`: give the value its real type.' },
      ],
    },
  },
  {
    // The scripts and benchmarks (plain JavaScript modules run by Node): the recommended rules.
    files: ['**/*.mjs', '**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { ...globals.node } },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-control-regex': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: tests,
    rules: {
      // Tests poke at wire shapes the types do not describe.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
)
