// The fronts' thread (front.ts startFront): starts each front it is asked for, tells the service thread its port,
// forwards the log lines of the answers a front gives itself, and stops or closes a front when told.
import { parentPort } from 'node:worker_threads'
import { listenFront, type FrontCommand, type FrontMessage, type ListeningFront } from './front.ts'

const port = parentPort
if (port === null) throw new Error('front-thread.ts runs as a worker thread (front.ts startFront)')
const post = (message: FrontMessage) => port.postMessage(message)
const fronts = new Map<number, Promise<ListeningFront | undefined>>()

port.on('message', (command: FrontCommand) => {
  const { id } = command
  if (command.type === 'listen') {
    fronts.set(id, listenFront(command.settings, (line) => post({ type: 'log', id, line })).then(
      (front) => {
        post({ type: 'listening', id, port: front.port })
        return front
      },
      (error: unknown) => {
        fronts.delete(id)
        post({ type: 'failed', id, message: error instanceof Error ? error.message : String(error) })
        return undefined
      },
    ))
    return
  }
  void fronts.get(id)?.then((front) => {
    if (command.type === 'stop-accepting') return front?.stopAccepting()
    fronts.delete(id)
    front?.close()
  })
})
