// Reads TAP 14 from stdin (tap --reporter=tap), echoes it, and ends with "<passed> <failed>".
// A test is a direct subtest of a test file (depth 1). A file that failed without any failing
// subtest (a crash, a type error at load, a timeout) counts as one failed test of its own.
// Before the last line it repeats each failure's own lines (its failed assertions and their diagnostics): CI
// shows the end of a long log, and a failure that happens once in many runs must be diagnosable from that end.
// A depth-1 failure's diagnostics follow its own "not ok" line (an error thrown in a test, or after a file's last
// test, has no lines before it): they are kept too, with the file's name.
import { createInterface } from 'node:readline'

/** Lines kept of one failure: the end of its block, where its failed assertion and diagnostics are. */
const FAILURE_LINES = 60

let passed = 0
let failed = 0
let fileFailures = 0
const failures = []
/** The lines of the current test file, and of its current depth-1 subtest. */
let fileLines = []
let subLines = []
let file = ''
/** The depth-1 failure whose diagnostics (the indented YAML block after its "not ok") are still coming. */
let open
const DIAGNOSTIC_LINES = 40
const tail = (lines) => (lines.length > FAILURE_LINES ? ['  ...', ...lines.slice(-FAILURE_LINES)] : lines)
const rl = createInterface({ input: process.stdin })
for await (const line of rl) {
  process.stdout.write(line + '\n')
  fileLines.push(line)
  subLines.push(line)
  if (open !== undefined) {
    if (/^ {6}/.test(line) && open.after < DIAGNOSTIC_LINES) { open.lines.push(line); open.after++; continue }
    if (!/^ {6}/.test(line)) open = undefined
  }
  const subtest = /^# Subtest: (.*)$/.exec(line)
  if (subtest) file = subtest[1]
  if (/^ {4}# Subtest: /.test(line)) subLines = [line]
  const sub = /^ {4}(not )?ok \d+ - (.*?)(?: # .*)?$/.exec(line)
  if (sub) {
    if (sub[1]) {
      failed++
      fileFailures++
      open = { name: sub[2], file, lines: tail(subLines), after: 0 }
      failures.push(open)
    } else passed++
    subLines = []
    continue
  }
  const top = /^(not )?ok \d+ - (.*?)(?: # .*)?$/.exec(line)
  if (top) {
    if (top[1] && fileFailures === 0) { failed++; failures.push({ name: top[2], file: top[2], lines: tail(fileLines) }) }
    fileFailures = 0
    fileLines = []
    subLines = []
  }
}
if (failures.length > 0) {
  for (const { name, file, lines } of failures) process.stdout.write(`\nfailure: ${name}${file && file !== name ? ` (${file})` : ''}\n${lines.join('\n')}\n`)
  process.stdout.write('\nfailed:\n' + failures.map(({ name }) => '  - ' + name).join('\n') + '\n')
}
// The caller prints the final line, because only it knows whether the command as a whole failed.
process.stdout.write(`${passed} ${failed}\n`)
