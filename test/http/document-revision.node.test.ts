// document-revision.test.ts against the node:http transport (see testTransport in fixtures/routes.ts).
process.env.TEST_HTTP_TRANSPORT = 'node'
await import('./document-revision.test.ts')
