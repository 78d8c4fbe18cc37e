// `node --import=<this file>`: runs the project's TypeScript (src, machines, test, bench) with one load hook that
// strips its types (hooks.mjs). What the tests and benches load their files with instead of tsx, whose resolve and
// load hooks see every module a process loads (about 1,450 for the service, nearly all of them JavaScript in
// node_modules), each through the hooks' thread; this hook passes those through at once. README "Notes on the
// toolchain" has the measured cost of both.
import { register } from 'node:module'

register('./hooks.mjs', import.meta.url)
