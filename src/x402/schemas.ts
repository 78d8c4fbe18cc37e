// Wire schemas of the x402 facilitator endpoints (protocol v2, scheme `exact` on EVM networks).
//
// They follow @x402/core's types and its zod validators (`@x402/core/schemas`, PaymentPayloadV2Schema and
// PaymentRequirementsV2Schema) field by field, and narrow what the protocol leaves generic to what the one scheme
// served here needs: `payload` is the exact EVM payload (EIP-3009 or Permit2, from @x402/evm's types), addresses and
// amounts are checked for form, so that malformed input is refused at the edge instead of throwing inside the
// facilitator. The protocol's own free-form maps (`extra`, `extensions`) stay maps: closed by `patternProperties`,
// which the route table accepts as a record. Fields the protocol declares nullish accept null.
import Type, { type TSchema } from 'typebox'
import { Address, Atomic } from '../api/common.ts'
import { FORMAT_PATTERNS } from '../engine/ids.ts'

/** Longest signature accepted: an ERC-6492 wrapped smart-wallet signature with factory calldata stays far below. */
export const SIGNATURE_HEX_CHARS_MAX = 16_384
/** Longest free-text field accepted (descriptions, reasons). */
export const TEXT_CHARS_MAX = 1_024
/** Most keys accepted in a free-form map (`extra`, `extensions`). */
export const MAP_KEYS_MAX = 32

const Nullish = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]))

/** A free-form JSON object of the protocol (`Record<string, unknown>`), closed as a record. */
export const FreeMap = (description: string) =>
  Type.Record(Type.String(), Type.Unknown(), { additionalProperties: false, maxProperties: MAP_KEYS_MAX, description })

const PrintableAscii = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[\\x20-\\x7e]+$' })

const UintString = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: 'Unsigned integer as a decimal string.' })
const Bytes32Hex = Type.String({ pattern: FORMAT_PATTERNS.bytes32, description: '32 bytes, hex with 0x prefix.' })
const SignatureHex = Type.String({
  pattern: '^0x[0-9a-fA-F]+$',
  minLength: 4,
  maxLength: SIGNATURE_HEX_CHARS_MAX,
  description: '65-byte ECDSA signature, or an ERC-1271 / ERC-6492 smart-wallet signature, hex with 0x prefix.',
})

/** CAIP-2 chain id (`namespace:reference`), e.g. `eip155:84532`. */
export const Caip2 = Type.String({
  pattern: '^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$',
  description: 'CAIP-2 network id, e.g. eip155:84532.',
  examples: ['eip155:31338'],
})

/** ResourceInfo of @x402/core: what the payment is for. */
export const ResourceInfo = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    description: Nullish(Type.String({ maxLength: TEXT_CHARS_MAX })),
    mimeType: Nullish(Type.String({ maxLength: 256 })),
    serviceName: Nullish(PrintableAscii(32)),
    tags: Nullish(Type.Array(PrintableAscii(32), { maxItems: 5 })),
    iconUrl: Nullish(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false, description: 'The resource paid for (x402 ResourceInfo).' },
)

/**
 * `extra` of exact EVM requirements: the token's EIP-712 domain and the transfer method. Other keys are allowed
 * because the protocol declares `extra` a free map (servers and extensions add their own).
 */
export const RequirementsExtra = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'EIP-712 domain name of the token, e.g. "USD Coin".' })),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'EIP-712 domain version of the token, e.g. "2".' })),
    assetTransferMethod: Type.Optional(Type.Union([Type.Literal('eip3009'), Type.Literal('permit2')])),
  },
  {
    patternProperties: { '^.*$': {} },
    additionalProperties: false,
    maxProperties: MAP_KEYS_MAX,
    description: 'Scheme-specific data. The exact EVM scheme over EIP-3009 needs name and version (the token\'s EIP-712 domain).',
  },
)

/** PaymentRequirements (x402 v2): what the resource server asks for. */
export const PaymentRequirements = Type.Object(
  {
    scheme: Type.String({ minLength: 1, maxLength: 64, description: 'Payment scheme; this facilitator serves "exact".' }),
    network: Caip2,
    amount: Atomic,
    asset: Address,
    payTo: Address,
    maxTimeoutSeconds: Type.Number({ exclusiveMinimum: 0, description: 'Longest time the payment may take to settle.' }),
    extra: Nullish(RequirementsExtra),
  },
  { additionalProperties: false, description: 'Payment requirements (x402 v2 PaymentRequirements).' },
)

/** EIP-3009 `transferWithAuthorization` payload of the exact EVM scheme (@x402/evm ExactEIP3009Payload). */
export const ExactEip3009Payload = Type.Object(
  {
    signature: SignatureHex,
    authorization: Type.Object(
      {
        from: Address,
        to: Address,
        value: UintString,
        validAfter: UintString,
        validBefore: UintString,
        nonce: Bytes32Hex,
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'Exact EVM payload, EIP-3009 transferWithAuthorization.' },
)

/** Permit2 payload of the exact EVM scheme (@x402/evm ExactPermit2Payload). */
export const ExactPermit2Payload = Type.Object(
  {
    signature: SignatureHex,
    permit2Authorization: Type.Object(
      {
        from: Address,
        permitted: Type.Object({ token: Address, amount: UintString }, { additionalProperties: false }),
        spender: Address,
        nonce: UintString,
        deadline: UintString,
        witness: Type.Object({ to: Address, validAfter: UintString }, { additionalProperties: false }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'Exact EVM payload, Permit2 through the x402 Permit2 proxy.' },
)

/** PaymentPayload (x402 v2): the signed payment the client sent to the resource server. */
export const PaymentPayload = Type.Object(
  {
    x402Version: Type.Integer({ minimum: 1, maximum: 1000, description: 'Protocol version of the payload; this facilitator serves 2.' }),
    resource: Nullish(ResourceInfo),
    accepted: PaymentRequirements,
    payload: Type.Union([ExactEip3009Payload, ExactPermit2Payload]),
    extensions: Nullish(FreeMap('Protocol extension data, by extension key.')),
  },
  { additionalProperties: false, description: 'Payment payload (x402 v2 PaymentPayload).' },
)

/** Body of POST .../verify and POST .../settle (x402 VerifyRequest / SettleRequest). */
export const FacilitatorRequest = Type.Object(
  {
    x402Version: Type.Integer({ minimum: 1, maximum: 1000, description: 'Protocol version; must equal paymentPayload.x402Version. This facilitator serves 2.' }),
    paymentPayload: PaymentPayload,
    paymentRequirements: PaymentRequirements,
  },
  { additionalProperties: false, description: 'x402 facilitator request: a payment and the requirements it must meet.' },
)
export type FacilitatorRequest = Type.Static<typeof FacilitatorRequest>

/** One payment kind the facilitator serves. */
export const SupportedKind = Type.Object(
  {
    x402Version: Type.Integer(),
    scheme: Type.String(),
    network: Type.String(),
    extra: Type.Optional(FreeMap('Scheme-specific data for this kind.')),
  },
  { additionalProperties: false },
)

/** Answer of GET .../supported (x402 SupportedResponse). */
export const SupportedResponse = Type.Object(
  {
    kinds: Type.Array(SupportedKind, { description: 'Exactly the (version, scheme, network) triples served.' }),
    extensions: Type.Array(Type.String(), { description: 'Protocol extensions served (none).' }),
    signers: Type.Record(Type.String(), Type.Array(Type.String()), {
      additionalProperties: false,
      description: 'Addresses that submit settlements, by CAIP family (eip155:*).',
    }),
  },
  { additionalProperties: false, description: 'Payment kinds this facilitator verifies and settles.' },
)
export type SupportedResponse = Type.Static<typeof SupportedResponse>

/** Answer of POST .../verify (x402 VerifyResponse). `isValid: false` is an answer, not an error. */
export const VerifyResponse = Type.Object(
  {
    isValid: Type.Boolean(),
    invalidReason: Type.Optional(Type.String({ description: 'Stable x402 reason code, e.g. invalid_exact_evm_payload_signature.' })),
    invalidMessage: Type.Optional(Type.String({ description: 'Human detail, shortened; never contains the RPC address.' })),
    payer: Type.Optional(Type.String({ description: 'Address that signed the payment.' })),
    extensions: Type.Optional(FreeMap('Extension data.')),
    extensionResponses: Type.Optional(FreeMap('Extension responses.')),
    extra: Type.Optional(FreeMap('Scheme-specific data.')),
  },
  { additionalProperties: false, description: 'Verification result.' },
)
export type VerifyResponse = Type.Static<typeof VerifyResponse>

/** Answer of POST .../settle (x402 SettleResponse). `success: false` is an answer, not an error. */
export const SettleResponse = Type.Object(
  {
    success: Type.Boolean(),
    errorReason: Type.Optional(Type.String({ description: 'Stable x402 reason code when success is false.' })),
    errorMessage: Type.Optional(Type.String({ description: 'Human detail, shortened; never contains the RPC address.' })),
    payer: Type.Optional(Type.String()),
    transaction: Type.String({ description: 'Settlement transaction hash; empty when nothing was sent.' }),
    network: Type.String({ description: 'CAIP-2 network of the settlement.' }),
    amount: Type.Optional(Type.String({ description: 'Amount settled, atomic units (schemes that settle less than authorized).' })),
    extensions: Type.Optional(FreeMap('Extension data.')),
    extensionResponses: Type.Optional(FreeMap('Extension responses.')),
    extra: Type.Optional(FreeMap('Scheme-specific data.')),
  },
  { additionalProperties: false, description: 'Settlement result.' },
)
export type SettleResponse = Type.Static<typeof SettleResponse>
