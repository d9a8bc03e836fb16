// Package httptransport is the internal HTTP transport between a producer's
// dispatcher and a consumer endpoint in another process, possibly on another
// machine: the same transport.Transport seam as the in-process transport,
// with the same canonical envelope and the same receipt semantics.
//
// # Wire
//
// POST {endpoint}/v1/deliveries/{destination}, Authorization: Bearer <workload
// token>, body (JSON):
//
//	{ "eventId", "eventType", "eventSchemaVersion",
//	  "envelope": base64 of the canonical envelope bytes exactly as stored,
//	  "envelopeDigest": "jcs-sha256-v1:<hex>",
//	  "member": the frozen Delivery Set member,
//	  "attemptId", "attemptNumber" }
//
// The answer to a request the endpoint accepted is always 200 with a body
// that says what happened; the status code never means "done":
//
//	{ "outcome": "acknowledged", "ack": ActiveConsumerAck@1, "receiptBody": the receipt's canonical JSON }
//	{ "outcome": "retryable" | "wait" | "non_retryable", "code": normalized code, "message": text }
//
// The client decodes the ack strictly (receipt.DecodeActiveConsumerAck) and
// returns it with the receipt body; the dispatcher then verifies both against
// the frozen member and the event exactly as for the in-process transport.
// Anything else — a refused token (401), an unknown destination (404), a bad
// request (400), any other status, a malformed answer, a connection refused
// or reset, a timeout, a response lost after the consumer committed — is a
// retryable error with its own code, never a quarantine and never an ack: the
// redelivery returns the consumer's first receipt (CON-1), so a lost response
// converges to one acknowledgement (OB-DELIVER-6).
//
// # Identity
//
// Each request carries a fresh workload token (package workload) whose
// subject is the dispatcher's workload, whose audience is exactly the
// destination's consumer name and whose scope is "outbox.deliver:<destination>".
// The handler verifies it before reading the body, so a missing, expired,
// wrong-audience, wrong-signer or replayed token never reaches the consumer
// or its database. TLS with provided certificates is the caller's
// http.Server / tls.Config; the client takes a CA pool.
//
// This package belongs to the outbox engine: it imports no owner or consumer
// package; the consumer is a transport.ConsumerFunc.
package httptransport
