// `npm start`: the service on its embedded default (two devnet chains, contracts deployed, demo accounts funded,
// 127.0.0.1:8402, data in ./snapshots), or on the networks of NETWORKS_FILE. Stops cleanly on SIGINT/SIGTERM.
import { existsSync } from 'node:fs'
import { startApp } from './app.ts'
import { stdoutLogger, withoutRequestLines } from '../http/log.ts'
import { ConfigError, loadServiceConfig } from './config.ts'
import { missingNodeFlags } from './node-flags.ts'

function line(text = ''): void {
  process.stdout.write(text + '\n')
}

async function main(): Promise<void> {
  const config = loadServiceConfig(process.env)
  // Test hook (test/persistence): while this file exists, no commit reaches the disk, so a test can kill the process
  // between the acknowledgement it waits for and durability.
  const holdFile = process.env['AGENT_CREDIT_TEST_HOLD_COMMITS_FILE']
  // REQUEST_LOG=0 drops the per-request lines only: startApp's own default for it is silence, which tests and the
  // in-process demo want, but a service without its warnings and errors cannot be operated.
  const app = await startApp(config, {
    ...(config.requestLog ? {} : { log: withoutRequestLines(stdoutLogger) }),
    ...(holdFile ? { holdCommitsWhile: () => existsSync(holdFile) } : {}),
  })
  line(`agent-credit listening on ${app.url}`)
  line(`  data directory ${config.dataDir} (durability ${config.durability})`)
  for (const n of app.networks) {
    // A network without an operator key is read-only (no completion, failure or liquidation): say so where the operator looks.
    const readOnly = n.operatorPrivateKey === undefined ? ' (read-only: no operatorKeyEnv)' : ''
    line(`  network ${n.slug} (${n.caip2}) rpc ${n.rpcUrl} credit contract ${n.creditContract} ${n.tokens.map((t) => `${t.symbol} ${t.address}`).join(' ')}${readOnly}`)
  }
  if (app.demo !== undefined) {
    line('  devnet demo accounts (test keys, never use them elsewhere):')
    for (const account of Object.values(app.demo)) line(`    ${account.role.padEnd(10)} ${account.address} ${account.privateKey}`)
  }
  const score = app.catalog().creditScore
  line(
    score.payment === null
      ? `  ${score.path}: off (CREDIT_SCORE=on or the config file's creditScore turns it on)`
      : `  ${score.path}: ${score.payment.amountAtomic} atomic ${score.payment.asset} on ${score.payment.network} to ${score.payment.payTo} (x402 v2, facilitator ${score.payment.facilitator})`,
  )
  line(`  catalog ${app.url}/.well-known/service.json, OpenAPI ${app.url}/openapi.json, agents ${app.url}/llms.txt`)
  const missing = missingNodeFlags()
  if (missing.length > 0) line(`  started without ${missing.join(' ')} (npm start passes it: more CPU in garbage collection without; src/app/node-flags.ts)`)

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    line(`agent-credit: ${signal}, finishing in-flight requests`)
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`agent-credit: stop failed: ${String(error)}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError || (error as Error)?.name?.endsWith('Error') ? (error as Error).message : String(error)
  process.stderr.write(`agent-credit: cannot start: ${message}\n`)
  process.exit(1)
})
