// Package ownerhttp carries the directed owner reads between processes: the
// Reader interfaces of ownerread/coreread, executionread, gatewayread and
// meteringread over the same internal HTTP stack as the outbox transport
// (signed single-use workload tokens, TLS from the caller's config, bounded
// timeouts, retry classification). A worker holds a Client instead of the
// owner's in-process Reads and never the owner's DSN; the owner's process
// serves Handler in front of its own Reads.
//
// # Wire
//
// POST {base}/v1/owner-reads/{read}, where read is the contract name
// (readExecutionEligibilityFact@1, validateSettlementInputCurrent@1, ...).
// Authorization: Bearer <workload token> whose audience is the owner's read
// endpoint (Audience(owner)) and whose scope is exactly that read
// (Scope(read)): a token for one read cannot call another. The body is the
// JSON of the read's request type, decoded strictly (an unknown or trailing
// field is a 400 and nothing is read).
//
// A 200 answer is {"answer", "reason", "body", ...}: the owner's answer and
// the canonical bytes of the object or receipt it found, byte for byte as
// stored. The client decodes the body with the contract's strict decoder
// (its digest recomputes) and answers the same Go value as the in-process
// read; a found answer whose body does not decode is refused, never
// trusted. Errors are {"code", "message"}: 400 invalid_request (the owner
// refused the request: ownerread.ErrInvalidRequest, the caller's fault, not
// retried), 400 bad_request (the endpoint could not decode it: a caller of
// another version, say; ErrUnavailable, retried), 401 a refused token, 404
// an unknown read, 503 owner_error (the owner could not answer: retry; its
// own error text stays in its log). A connection refused or reset, a
// timeout or a lost response is ErrUnavailable too. A read changes nothing
// but the operation-bound validation receipts, which the owner stores per
// operation and replays, so a retried validation gets the first receipt;
// readRunExecutionFinalization issues its receipt again at each read (a new
// validatedAt, outside its digest: the quadruple is the same).
package ownerhttp
