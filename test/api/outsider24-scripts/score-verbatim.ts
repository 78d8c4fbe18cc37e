// outsider24: llms.txt's credit-score snippet, taken from the served llms.txt verbatim and run with PAYER_KEY (the
// devnet borrower, funded on devnet-b) and subject (the devnet borrower). node --import tsx ...
import { writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { base } from './doc.ts'

const llms = await (await fetch(`${base}/llms.txt`)).text()
const lines = llms.split('\n')
const start = lines.findIndex((l) => l.trim().startsWith("import { generateKeyPair"))
const end = lines.findIndex((l, i) => i > start && l.includes('JSON.parse(new TextDecoder().decode(plaintext))'))
const verbatim = lines.slice(start, end + 1).map((l) => l.replace(/^ {3}/, '')).join('\n')
// The one line added: what the paid POST answered, before the snippet decrypts it.
const snippet = verbatim.replace('const { jwe } = await res.json()', 'const answer = await res.clone().json(); console.log(res.status, JSON.stringify(answer).slice(0, 600))\nconst { jwe } = await res.json()')
const file = `${process.cwd()}/test/api/outsider24-scripts/.score-snippet.mts`
writeFileSync(file, `const PAYER_KEY = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6'\nconst subject = '${process.env.SUBJECT ?? '0x90F79bf6EB2c4f870365E785982E1f101E93b906'}'\n${snippet}\nconsole.log('status', res.status, res.headers.get('payment-required')?.slice(0, 80)); console.log('score', score, Object.keys(factors ?? {}).length, 'factors')\n`)
try { console.log(execFileSync('node', ['--import', 'tsx', file], { encoding: "utf8", stdio: "pipe" })) } catch (e: any) { console.log("snippet printed:", String(e.stdout)); console.log("snippet failed:", String(e.stderr).split("\n").filter((l: string) => !/^\s+at /.test(l)).join("\n").slice(0, 1500)) }
