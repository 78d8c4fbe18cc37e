// The chain reads a caller can make the service do (a transaction proof, an ERC-8004 re-check): each costs a call on
// the operator's RPC quota, which the chain follower and the wallet watcher share, and a signed-in wallet is free
// (SIWE needs no funds). So they draw on one budget per network, and one wallet on a share of it: without it a few
// wallets reporting random transaction hashes at the per-wallet rate limit spent the quota and stalled the money path
// for everyone. Wallets are free, so one client address (an IPv6 client's /64) also takes at most its part of it:
// without that, four free wallets of one address (or payments signed by fresh keys) held it empty for everyone (an
// outsider's finding, test/x402/outsider13-free-payers-budget.test.ts). The follower and the watcher, the service's
// own reads, do not draw on it.
import type { Address } from 'viem'
import { RateLimiter } from '../http/rate-limit.ts'

export interface ChainReadBudgetOptions {
  /** Request-path chain reads per second on one network, all callers together. */
  perSecond: number
  /** Reads a network's budget allows at once. */
  burst: number
}

/** One wallet's share of a network's budget: a quarter of its rate and burst (at least one read). */
export const WALLET_SHARE_DIVISOR = 4

/**
 * One client address's part of a network's budget, whatever wallets its requests name: a quarter of its rate and
 * burst (at least one read), as a wallet's share. A wallet is free, so it takes four addresses to empty the budget,
 * and an agent behind a shared address keeps a wallet's worth of reads.
 */
export const CLIENT_PART_DIVISOR = 4

/**
 * One client address's part (an IPv6 client's /64) of the share its unproven requests of a kind take together: an
 * eighth of it (at least one read). Without it one address sending forged sign-ins that name random addresses (no
 * wallet, no gas) spent the whole share and every other client's contract wallet was refused (an outsider's finding,
 * test/auth/outsider12-unproven-signins.test.ts); now that takes eight addresses, as every per-client bound does.
 */
export const CLIENT_SHARE_DIVISOR = 8

/** A chain read the budget refused: 503 chain_reads_exhausted, nothing read and nothing changed. */
export class ChainReadsExhaustedError extends Error {
  override readonly name = 'ChainReadsExhaustedError'
  constructor(
    readonly network: string,
    readonly retryAfterSeconds: number,
    readonly walletShare: boolean,
    /** Whose share was used, when it was a share: the caller's wallet, or every unproven request of a kind. */
    spentBy = 'this wallet used its share',
  ) {
    super(walletShare
      ? `${spentBy} of the chain reads requests may make on ${network}; retry in ${retryAfterSeconds} s`
      : `the chain reads requests may make on ${network} are used up for now; retry in ${retryAfterSeconds} s`)
  }
}

export class ChainReadBudget {
  readonly #networks: RateLimiter
  readonly #wallets: RateLimiter
  /** Per client address, its part of the unproven requests' share (CLIENT_SHARE_DIVISOR). */
  readonly #clients: RateLimiter
  /** Per client address, its part of the network's budget (CLIENT_PART_DIVISOR). */
  readonly #clientParts: RateLimiter
  readonly #clock: () => number

  constructor(options: ChainReadBudgetOptions, clock: () => number = Date.now) {
    this.#networks = new RateLimiter({ burst: options.burst, refillPerSecond: options.perSecond })
    const shareBurst = Math.max(1, Math.floor(options.burst / WALLET_SHARE_DIVISOR))
    this.#wallets = new RateLimiter({ burst: shareBurst, refillPerSecond: options.perSecond / WALLET_SHARE_DIVISOR })
    this.#clients = new RateLimiter({
      burst: Math.max(1, Math.floor(shareBurst / CLIENT_SHARE_DIVISOR)),
      refillPerSecond: options.perSecond / WALLET_SHARE_DIVISOR / CLIENT_SHARE_DIVISOR,
    })
    this.#clientParts = new RateLimiter({
      burst: Math.max(1, Math.floor(options.burst / CLIENT_PART_DIVISOR)),
      refillPerSecond: options.perSecond / CLIENT_PART_DIVISOR,
    })
    this.#clock = clock
  }

  /**
   * Spends one read of `network`'s budget for `wallet` asked by `client` (the request's clientKeyOf), or throws
   * ChainReadsExhaustedError. The client's part and the wallet's share are taken first, so a client or a wallet past
   * its own never spends the budget the others share; a bound that refuses gives back what the ones before it took.
   * `client` undefined: a read with no request's address to charge (a /credit-score payment the official resource
   * server verifies through the in-process facilitator; its route takes the address's part itself, takePart).
   */
  take(network: string, wallet: Address, client: string | undefined): void {
    this.#take(network, client, wallet.toLowerCase())
  }

  /**
   * Spends one read of `network`'s budget for a request whose wallet nothing proved yet (`kind`: a sign-in's contract
   * wallet check, a payment whose payer's key did not sign it), or throws ChainReadsExhaustedError: from one share that every such request of that kind takes
   * together, never from the share of the wallet it names, which anyone can name (a review's finding: strangers
   * without a session spent a victim's share, test/auth/signin-stranger-share.test.ts). So such requests, whatever
   * wallets they name, spend at most a wallet's share of the network's budget. Given the request's `client` (its
   * clientKeyOf), that client's part of the share is taken first, so one address cannot spend the whole share.
   */
  takeUnproven(network: string, kind: 'sign-in' | 'payment', client: string | undefined): void {
    const spentBy = `the ${kind}s whose wallet is checked on chain, all together, used their share`
    if (client === undefined) return this.#take(network, undefined, `unproven ${kind}`, spentBy)
    const key = `${network}:${kind}:${client}`
    const nowMs = this.#clock()
    const own = this.#clients.take(key, nowMs)
    if (!own.allowed) throw new ChainReadsExhaustedError(network, own.retryAfterSeconds, true, `this client address used its part of the ${kind}s checked on chain`)
    try {
      this.#take(network, client, `unproven ${kind}`, spentBy)
    } catch (error) {
      // Refused on a later bound: nothing was read, so the client's part of the share is not spent either.
      this.#clients.refund(key, nowMs)
      throw error
    }
  }

  /**
   * The part of `network` of `client`, the share `shareKey` (`spentBy`: whose it is, for the refusal), then the
   * network's budget; each refusal gives back what the bounds before it took (nothing was read).
   */
  #take(network: string, client: string | undefined, shareKey: string, spentBy?: string): void {
    const nowMs = this.#clock()
    if (client !== undefined) this.takePart(network, client)
    try {
      this.#takeShare(network, shareKey, nowMs, spentBy)
    } catch (error) {
      if (client !== undefined) this.giveBackPart(network, client)
      throw error
    }
    const shared = this.#networks.take(network, nowMs)
    if (shared.allowed) return
    if (client !== undefined) this.giveBackPart(network, client)
    this.#wallets.refund(`${network}:${shareKey}`, nowMs)
    throw new ChainReadsExhaustedError(network, shared.retryAfterSeconds, false)
  }

  /**
   * One read of `client`'s part of `network`'s budget only, or ChainReadsExhaustedError: for a read whose share and
   * network's budget are taken where no client address is known (a /credit-score payment, which the official
   * resource server verifies through the in-process facilitator: take(network, payer, undefined)).
   */
  takePart(network: string, client: string): void {
    const part = this.#clientParts.take(`${network}:${client}`, this.#clock())
    if (!part.allowed) throw new ChainReadsExhaustedError(network, part.retryAfterSeconds, true, 'this client address used its part')
  }

  /** Gives back a read of takePart that a later bound refused (nothing was read). */
  giveBackPart(network: string, client: string): void {
    this.#clientParts.refund(`${network}:${client}`, this.#clock())
  }

  /** One read of the share `shareKey` of `network`, or ChainReadsExhaustedError. */
  #takeShare(network: string, shareKey: string, nowMs: number, spentBy?: string): void {
    const own = this.#wallets.take(`${network}:${shareKey}`, nowMs)
    if (!own.allowed) throw new ChainReadsExhaustedError(network, own.retryAfterSeconds, true, spentBy)
  }

  /**
   * Spends one read of `wallet`'s own share only, or throws ChainReadsExhaustedError: for the reads a wallet can make
   * only by holding a transaction of its own on chain (a job it funded or is the borrower of), which strangers
   * spending the network's budget must not refuse, and which the wallet must not repeat at will.
   */
  takeOwn(network: string, wallet: Address): void {
    this.#takeShare(network, wallet.toLowerCase(), this.#clock())
  }
}
