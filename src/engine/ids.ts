// The shapes of ids, once: the engine checks and mints them, the API's schemas validate them with the same patterns.

/** Regular expression sources (also JSON Schema `pattern`s) of the ids the API accepts. */
export const ID_PATTERNS = {
  /** Chosen by the job's client, who funds the job on chain under keccak256(utf8(jobId)) before the service knows it. */
  job: '^job_[A-Za-z0-9_-]{1,64}$',
  /** Chosen by the source's agent; it must not look like a job id, since a credit request names either. */
  source: '^[A-Za-z0-9_.:-]{1,128}$',
  offer: '^off_[0-9]{1,15}$',
  advance: '^adv_[0-9]{1,15}$',
} as const

/** Prefixes of the ids the engine mints from its sequences: the same commands replayed mint the same ids. */
export const ID_PREFIXES = { offer: 'off_', lease: 'lse_', advance: 'adv_' } as const
