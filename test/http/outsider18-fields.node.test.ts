// outsider18-fields.test.ts against the node:http transport (see testTransport in fixtures/routes.ts).
process.env.TEST_HTTP_TRANSPORT = 'node'
await import('./outsider18-fields.test.ts')
