// GET /auth/nonce, POST /auth/session and the revocation routes: additions to the interface spec (DESIGN section 7).
import Type from 'typebox'
import { Address, IsoTime, isoFromMs, StrictObject } from '../api/common.ts'
import { problemOf } from '../api/problems.ts'
import { CHAIN_READS_EXHAUSTED } from '../api/routes/shared.ts'
import { defineRoute, type AnyRoute } from '../http/route.ts'
import type { AuthService } from './siwe.ts'

export const NonceResponse = StrictObject({
  nonce: Type.String({ description: 'Single-use nonce to put in the EIP-4361 message.' }),
  expiresAt: IsoTime,
  domain: Type.String({ description: 'The domain the message must name.' }),
  chainIds: Type.Array(Type.Integer(), { description: 'Chain ids a message may name.' }),
})

export const SessionRequest = StrictObject({
  message: Type.String({ minLength: 1, maxLength: 4096, description: 'The EIP-4361 message, as signed.' }),
  signature: Type.String({ pattern: '^0x[0-9a-fA-F]+$', maxLength: 16384, description: 'EIP-191 signature of the message (ERC-1271/6492 for smart wallets).' }),
})

export const SessionResponse = StrictObject({
  token: Type.String({ description: 'Opaque bearer token; send it as Authorization: Bearer <token>.' }),
  tokenType: Type.Literal('Bearer'),
  address: Address,
  chainId: Type.Integer(),
  expiresAt: IsoTime,
})

export const RefreshResponse = StrictObject({
  address: Address,
  chainId: Type.Integer(),
  expiresAt: IsoTime,
})

export const RevokeResponse = StrictObject({
  address: Address,
  revoked: Type.Integer({ minimum: 0, description: 'How many sessions ended.' }),
})

const noStore = { 'cache-control': 'no-store' }

export function authRoutes(auth: AuthService): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/auth/nonce',
      operationId: 'getAuthNonce',
      callers: 'public',
      summary: 'Issue a single-use sign-in nonce',
      description: 'Step 1 of Sign-In with Ethereum (EIP-4361). The nonce is stateless (an HMAC of its issue time under the service\'s secret): issuing it stores nothing. It expires after a few minutes and is used up by the first successful POST /auth/session.',
      tags: ['auth'],
      auth: 'none',
      responses: { 200: { description: 'A fresh nonce', schema: NonceResponse } },
      handler: async () => {
        const issued = await auth.issueNonce()
        return { status: 200, body: { nonce: issued.nonce, expiresAt: isoFromMs(issued.expiresAtMs), domain: issued.domain, chainIds: issued.chainIds }, headers: noStore }
      },
    }),
    defineRoute({
      method: 'post',
      path: '/auth/session',
      operationId: 'createAuthSession',
      callers: 'public',
      summary: 'Exchange a signed SIWE message for a bearer token',
      description: 'Step 2 of Sign-In with Ethereum. The message must name this service\'s domain, an accepted chain id and an unused, unexpired nonce from GET /auth/nonce; an EOA\'s signature is recovered without the chain; any other is verified through the chain, so smart-contract wallets (ERC-1271, ERC-6492) sign in too, and that read is charged to the network\'s chain read budget (one share for all such sign-ins, whatever address they name: the address is not proven before the read; of it, an eighth per client address). A wallet holds at most sessionsPerWalletMax live sessions (catalog auth): a sign-in beyond it ends the wallet\'s oldest session. Sessions opened are bounded per client address (an IPv6 client\'s /64) and for all clients together (catalog auth.signInsPerClientPerHour, auth.signInsPerHour).',
      tags: ['auth'],
      auth: 'none',
      body: SessionRequest,
      responses: {
        201: { description: 'Session opened', schema: SessionResponse },
        400: { description: 'Not an EIP-4361 message (siwe_message_invalid), or the body fails validation (validation_failed, malformed_json).' },
        401: { description: 'Sign-in refused: siwe_domain_mismatch, siwe_chain_unsupported, siwe_nonce_invalid (not issued by this service, altered, or already used), siwe_nonce_expired, siwe_message_expired, siwe_message_not_yet_valid, siwe_signature_invalid.' },
        429: { description: 'This client address opened as many sessions as it may for now (sign_ins_client_limited, with Retry-After; the nonce stays unused; catalog auth.signInsPerClientPerHour).' },
        503: { description: `A contract wallet's signature could not be checked: the chain is unreachable (chain_unavailable), or ${CHAIN_READS_EXHAUSTED} The service opens no more sessions for now, from any client (sign_ins_exhausted, with Retry-After; catalog auth.signInsPerHour), except to a wallet with standing (a lender that has paid a lease, a borrower that repaid; held to its own bounds) or one that holds a live session (the new session replaces its oldest); better, refresh a live session (POST /auth/session/refresh). The nonce stays unused: the same message may be sent again.` },
      },
      handler: async ({ body, clientKey }) => {
        let session
        try {
          session = await auth.createSession({ message: body.message, signature: body.signature as `0x${string}`, client: clientKey })
        } catch (error) {
          throw problemOf(error)
        }
        return {
          status: 201,
          body: { token: session.token, tokenType: 'Bearer' as const, address: session.address, chainId: session.chainId, expiresAt: isoFromMs(session.expiresAtMs) },
          headers: noStore,
        }
      },
    }),
    defineRoute({
      method: 'post',
      path: '/auth/session/refresh',
      operationId: 'refreshAuthSession',
      callers: 'any session',
      summary: 'Extend the current session',
      description: 'Extends the live session of this request in place: the same bearer token, expiring sessionTtlSeconds from now (catalog auth), but never past its message\'s expirationTime nor a week after the wallet signed it (then it is answered unchanged: sign in again). The store keeps no new record, so no sign-in budget is charged: when strangers hold all clients\' sign-in bucket empty (503 sign_ins_exhausted), an agent that refreshes before its session expires keeps it (the SDK does so). No body (or an empty object); no Idempotency-Key (a repeat extends again, to the same bound).',
      tags: ['auth'],
      auth: 'session',
      // No body, or an empty object: anything else is refused 400 (a field here means a client that expects one to count).
      body: StrictObject({}),
      responses: { 200: { description: 'The session, extended', schema: RefreshResponse }, 400: { description: 'A body that is not empty (validation_failed).' }, 401: { description: 'No valid bearer token, or the session ended meanwhile (unauthorized).' } },
      handler: async ({ session }) => {
        const refreshed = await auth.refresh(session)
        return { status: 200, body: { address: refreshed.address, chainId: refreshed.chainId, expiresAt: isoFromMs(refreshed.expiresAtMs) }, headers: noStore }
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/auth/session',
      operationId: 'revokeAuthSession',
      callers: 'any session',
      summary: 'End the current session',
      description: 'Revokes the bearer token of this request: from the answer on, it is refused with 401 unauthorized.',
      tags: ['auth'],
      auth: 'session',
      responses: { 200: { description: 'The session ended', schema: RevokeResponse }, 401: { description: 'No valid bearer token (unauthorized).' } },
      handler: async ({ session }) => ({ status: 200, body: { address: session.address, revoked: await auth.revoke(session, false) }, headers: noStore }),
    }),
    defineRoute({
      method: 'delete',
      path: '/auth/sessions',
      operationId: 'revokeAllAuthSessions',
      callers: 'any session',
      summary: 'End every session of the signed-in wallet',
      description: 'Revokes every live session of the wallet, this one included (for example after a token leaked): from the answer on, each is refused with 401 unauthorized.',
      tags: ['auth'],
      auth: 'session',
      responses: { 200: { description: 'The sessions ended', schema: RevokeResponse }, 401: { description: 'No valid bearer token (unauthorized).' } },
      handler: async ({ session }) => ({ status: 200, body: { address: session.address, revoked: await auth.revoke(session, true) }, headers: noStore }),
    }),
  ]
}
