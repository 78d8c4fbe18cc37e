// Whether a module is the script Node was started with. The loader names the main module by the URL of its real path,
// so comparing `import.meta.url` with `file://` + `process.argv[1]` is false, and the script silently does nothing, when the
// checkout's path has a space or a non-ASCII character (URL-encoded in one, not in the other) or is reached through a
// symlink.
import { existsSync, realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

export function isMainModule(moduleUrl: string): boolean {
  const started = process.argv[1]
  return started !== undefined && existsSync(started) && pathToFileURL(realpathSync(started)).href === moduleUrl
}
