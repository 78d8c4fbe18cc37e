// Reads TAP 14 from stdin (tap --reporter=tap), echoes it, and ends with "<passed> <failed>".
// A test is a direct subtest of a test file (depth 1). A file that failed without any failing
// subtest (a crash, a type error at load, a timeout) counts as one failed test of its own.
import { createInterface } from 'node:readline'

let passed = 0
let failed = 0
let fileFailures = 0
const failures = []
const rl = createInterface({ input: process.stdin })
for await (const line of rl) {
  process.stdout.write(line + '\n')
  const sub = /^ {4}(not )?ok \d+ - (.*?)(?: # .*)?$/.exec(line)
  if (sub) {
    if (sub[1]) { failed++; fileFailures++; failures.push(sub[2]) } else passed++
    continue
  }
  const top = /^(not )?ok \d+ - (.*?)(?: # .*)?$/.exec(line)
  if (top) {
    if (top[1] && fileFailures === 0) { failed++; failures.push(top[2]) }
    fileFailures = 0
  }
}
if (failures.length > 0) process.stdout.write('\nfailed:\n' + failures.map((f) => '  - ' + f).join('\n') + '\n')
// The caller prints the final line, because only it knows whether the command as a whole failed.
process.stdout.write(`${passed} ${failed}\n`)
