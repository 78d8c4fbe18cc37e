// The shapes of ids, once: the engine checks and mints them, the API's schemas validate them with the same patterns.
// Network slugs, addresses, 32-byte keys and block numbers are here too, for the same reason.

/** Regular expression sources (also JSON Schema `pattern`s) of the ids the API accepts. */
export const ID_PATTERNS = {
  /** Chosen by the job's client, who funds the job on chain under its key on the network (src/chain/ids.ts jobKey) before the service knows it. */
  job: '^job_[A-Za-z0-9_-]{1,64}$',
  /** Chosen by the source's agent; it must not look like a job id, since a credit request names either. */
  source: '^[A-Za-z0-9_.:-]{1,128}$',
  offer: '^off_[0-9]{1,15}$',
  advance: '^adv_[0-9]{1,15}$',
} as const

/**
 * The other identifiers the API, the configuration files and the reconciliation JSON share: written once here, reused
 * by every schema that validates one.
 */
export const FORMAT_PATTERNS = {
  /** A network's slug (the networks file, the catalog, every route that names a network). */
  network: '^[a-z0-9][a-z0-9-]{0,62}$',
  /** An EVM address in any letter case. */
  address: '^0x[0-9a-fA-F]{40}$',
  /** 32 bytes in hex: transaction hashes, contract keys. */
  bytes32: '^0x[0-9a-fA-F]{64}$',
  /** A block number, decimal, as a string (uint64 range). */
  block: '^(0|[1-9][0-9]{0,19})$',
} as const

/** Prefixes of the ids the engine mints from its sequences: the same commands replayed mint the same ids. */
export const ID_PREFIXES = { offer: 'off_', lease: 'lse_', advance: 'adv_' } as const
