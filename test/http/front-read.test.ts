// The front reads the client's side of a passed connection into its thread's one buffer (src/http/front.ts
// readAcceptedIntoBuffer, issue 11): net.Server takes no `onread`, so the front sets on the accepted socket what
// `new Socket({ onread })` sets. What the gate relies on must hold as with 'data' events: each chunk is a copy (the gate
// keeps a chunk behind a pending answer while later reads reuse the buffer), a paused socket reads again once resumed
// (the gate's back-pressure), and the client's FIN still ends the stream ('end': the gate passes it on to uWS).
import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import t from 'tap'
import { readAcceptedIntoBuffer } from '../../src/http/front.ts'

t.test('an accepted socket read into the shared buffer hands over copies, resumes after a pause and ends', async (t) => {
  const chunks: Buffer[] = []
  let taken: (() => void) | undefined
  let engaged = false
  const server = createServer((socket) => {
    engaged = readAcceptedIntoBuffer(socket, (chunk) => {
      chunks.push(chunk)
      taken?.()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const client = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', noDelay: true })
  t.teardown(() => client.destroy())
  const [socket] = (await once(server, 'connection')) as [Socket]
  t.ok(engaged, 'this Node takes a user buffer on an accepted socket')
  const sent = async (text: string) => {
    const read = new Promise<void>((resolve) => { taken = resolve })
    client.write(text)
    await read
  }

  await sent('first chunk')
  await sent('SECOND')
  t.same(chunks.map((c) => c.toString()), ['first chunk', 'SECOND'], 'each chunk as sent')
  t.equal(chunks[0]!.toString(), 'first chunk', 'the first chunk is a copy: the second read did not overwrite it')
  t.notOk(socket.listenerCount('data') > 0 || socket.readableLength > 0, "no 'data' event, nothing buffered in the stream")

  // Paused (the gate's back-pressure stops the socket's reads), then resumed: what came meanwhile is read.
  socket.pause()
  const resumedRead = new Promise<void>((resolve) => { taken = resolve })
  client.write('while paused')
  setImmediate(() => socket.resume())
  await resumedRead
  t.equal(chunks.at(-1)?.toString(), 'while paused', 'read once resumed')

  const ended = once(socket, 'end')
  client.end()
  await ended
  t.pass("the client's FIN ends the stream")
  socket.destroy()
})
