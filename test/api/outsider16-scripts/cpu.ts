// outsider16 scripts: this process's CPU share (the in-process service's) over `ms` of waiting.
export async function cpuShare(ms: number): Promise<string> {
  const start = process.cpuUsage()
  await new Promise((resolve) => setTimeout(resolve, ms))
  const used = process.cpuUsage(start)
  return `${(((used.user + used.system) / 1000 / ms) * 100).toFixed(1)} % of a core`
}
