// Package envelope is the CanonicalEventEnvelope@1 contract and the registry
// of exact event pairs (DS-7).
//
// # Envelope
//
// An envelope is a closed JSON object: eventId (lowercase UUID), eventType
// (an exact registered literal such as "run.created@2.0"),
// eventSchemaVersion (the suffix after '@'), aggregateType, aggregateId,
// aggregateRevision (≥ 1), the tenant (tenantKind, tenantId, workspaceId,
// optional projectId), correlationId, optional causationId, optional
// operationId, optional actor, occurredAt (UTC, microseconds, "Z") and the
// payload of the exact pair. Integers are safe integers; amounts are
// canonical decimal strings, never JSON numbers.
//
// # Envelope digest
//
// eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256 are computed by
// Envelope.Digest: jcs-sha256-v1 over the RFC 8785 canonical bytes of the
// whole envelope, payload included. The two digest fields are not members of
// the envelope object (the digest cannot cover itself); they travel beside it
// as event row columns, in acks and in receipts. Because timestamps have one
// canonical text form and numbers are safe integers, an envelope read back
// from PostgreSQL re-digests identically.
//
// # Pairs
//
// Pairs lists the thirteen pairs of the first full release. Each EventPair
// carries its producer boundary, aggregate type and rule (how aggregateId and
// aggregateRevision follow from the payload), its strict payload description
// (package schema: the same description decodes, and generates JSON Schema
// and TypeScript) and refinement rules. Pair(eventType, schemaVersion) is an
// exact lookup: prefixes, wildcards, aliases and "latest" are
// ErrUnknownEventPair.
//
// Payload field names follow the receipt source branches of the outbox
// document (billingReservationId, runId, attemptExecutionManifestRef, …), so
// Envelope.Identity can be compared field by field with a receipt's source.
// Payloads the documents do not spell out are this project's definitions
// (EventPair.OwnDefinition); docs/contracts/envelope.md lists them.
package envelope
