// The layer map of src/ (docs/architecture.md), checked by `npm run lint`. A module may import its
// own layer and the layers below it; an import upwards, or any import cycle between modules, is an
// error. (Folders of one layer may import each other; the module cycle rule still holds there.) Type-only imports count like the others: a type sits in the layer that
// owns it, so importing it is depending on that layer.

/** Lowest first. A root file is in the layer its line names; a folder with all it holds. */
const LAYERS = [
  ['core', '^src/(settings|net|telemetry)/|^src/(clock|paths|logging|config|config-docs|metrics|control-characters|secret-names)[.]ts$'],
  ['db', '^src/db/'],
  ['accounts', '^src/accounts/'],
  ['platform', '^src/(http|keys|maintenance|backup)/|^src/(keys|deps|startup-errors)[.]ts$'],
  ['auth', '^src/auth/'],
  ['webhooks', '^src/webhooks/'],
  ['events', '^src/events/'],
  ['delivery', '^src/delivery/'],
  ['features', '^src/(portal|admin|operations|products)/'],
  ['app', '^src/(app|server|maintenance-jobs)[.]ts$'],
  ['cli', '^src/cli/'],
  ['main', '^src/main[.]ts$'],
];

// Tests (*.test.ts) and src/testing/ (every helper of the tests: the test app, fixtures, kits, the
// receiver, processes) build the whole app: they may import any layer. They still may not form a
// cycle, and the code that ships may not import them (the npm package leaves them out).
const TEST_CODE = '[.]test[.]ts$|^src/testing/';

// Modules of src/ that the plaza command does not import, and why they are not test helpers.
const NOT_FROM_MAIN = [
  '^src/auth/password-strength[.]worker[.]ts$', // a worker thread's entry, loaded by its URL
  '^src/(config-docs|http/errors-docs)[.]ts$', // npm run docs:generate writes docs/ with them
  '^src/db/schema-snapshot[.]ts$', // npm run schema:snapshot and the drift check in CI
];

const upwards = LAYERS.slice(0, -1).map(([name, path], index) => ({
  name: `layer-${name}`,
  comment: `${name} imports a layer above it (docs/architecture.md): move the piece it needs down, to the layer that owns it`,
  severity: 'error',
  from: { path, pathNot: TEST_CODE },
  to: { path: LAYERS.slice(index + 1).map(([, above]) => above).join('|') },
}));

export default {
  forbidden: [
    ...upwards,
    {
      name: 'unplaced',
      comment: 'every module of src/ is in a layer of .dependency-cruiser.cjs (and docs/architecture.md)',
      severity: 'error',
      from: { path: '^src/', pathNot: [TEST_CODE, ...LAYERS.map(([, path]) => path)].join('|') },
      to: {},
    },
    {
      name: 'delivery-queue',
      comment: 'the queue engine (delivery/queue/) knows neither the attempt (dispatch/) nor the log (history/) nor the loop',
      severity: 'error',
      from: { path: '^src/delivery/queue/', pathNot: TEST_CODE },
      to: { path: '^src/delivery/(dispatch|history)/|^src/delivery/worker[.]ts$' },
    },
    {
      name: 'delivery-dispatch',
      comment: 'one attempt (delivery/dispatch/) may use the queue, not the log (history/) nor the loop',
      severity: 'error',
      from: { path: '^src/delivery/dispatch/', pathNot: TEST_CODE },
      to: { path: '^src/delivery/history/|^src/delivery/worker[.]ts$' },
    },
    {
      name: 'tests-not-shipped',
      comment: 'the code that ships imports no test code: src/testing/ and *.test.ts are not in the npm package (package.json files)',
      severity: 'error',
      from: { path: '^src/', pathNot: TEST_CODE },
      to: { path: TEST_CODE },
    },
    {
      name: 'test-helpers-in-testing',
      comment: 'a module that the plaza command never loads is dead code or a test helper; a test helper belongs in src/testing/ (one place, not shipped)',
      severity: 'error',
      from: { path: '^src/main[.]ts$' },
      to: { path: '^src/', pathNot: [TEST_CODE, ...NOT_FROM_MAIN].join('|'), reachable: false },
    },
    {
      name: 'client-outside-plaza',
      comment: 'the client library (clients/) is a package of its own that Plaza does not use: src/ (tests too) never imports it',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^clients/' },
    },
    {
      name: 'client-standalone',
      comment: 'the client library depends on no part of Plaza: it talks to Plaza over HTTP only (its live tests start `plaza serve` as a process)',
      severity: 'error',
      from: { path: '^clients/' },
      to: { path: '^(src|bench|test)/' },
    },
    {
      name: 'no-cycle',
      comment: 'an import cycle between modules',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|clients/[^/]+/(src|test))/',
  },
};
