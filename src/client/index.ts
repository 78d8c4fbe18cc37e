// The package's client entry (package.json "exports" ./client): the typed SDK, the event stream, the chain module
// and the plain HTTP client they are built on.
export { AgentCredit, CreditApiError, OfferNotMatchedError, type AgentCreditOptions, type CreditRequestBody, type JobCreationBody, type LenderRegistrationBody, type OfferView, type AdvanceView, type JobView, type LeaseEventMessage, type ChainStepsView, type EventStreamTuning, type Page, type PageQuery } from './sdk.ts'
export { EventStream, type EventStreamOptions, type StreamEvent, type StreamMessage, type StreamResync } from './stream.ts'
export { ChainAgent, type AgentNetwork, type CatalogNetworkEntry, type WireTransaction } from './chain.ts'
export { CreditClient, nextLink, type Reply, type CallOptions } from './client.ts'
