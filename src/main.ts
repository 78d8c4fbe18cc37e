// Entry point of the service. The HTTP server lands with the HTTP issue; until then this says so.
process.stdout.write('agent-credit: the engine is a library for now (src/engine); the HTTP service is not wired yet.\n')
