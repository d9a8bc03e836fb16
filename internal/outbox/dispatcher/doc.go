// Package dispatcher delivers outbox deliveries of one producer database to
// their consumers, at least once, and records every outcome under a fence.
//
// # Claim
//
// A claim is one short transaction (one statement): it selects eligible
// deliveries — status=pending with available_at ≤ now(); a leased delivery
// whose lease expired becomes pending only through recovery, which finishes
// its attempt first — ordered by (available_at, created_at, event_id) with
// FOR UPDATE SKIP LOCKED LIMIT batch (per destination an ordered index scan
// that stops at the limit), sets them leased with this worker as
// owner, a fresh random fencing token (lease_token), a deadline, a fresh
// attempt id and attempt_count+1, and inserts the immutable attempt start.
// Only after that commit is the consumer called, outside any transaction, so
// every window in which the consumer "may have been called" has a durable
// attempt id. There is no cursor or progress value: the work set is always
// the explicit query (OB-CLAIM-1, OB-CLAIM-4).
//
// A claim round runs when the loop wakes: on NOTIFY from an append
// transaction (channel NotifyChannel, unless DisableListen), after
// PollInterval otherwise, and at once again while claims come back full.
// After a claim that came back short the next one waits until ClaimCooldown
// (default 40ms) after it started, so the wake-ups of a trickle of small
// appends make one claim, one consumer call and one ack transaction instead
// of one each.
//
// Claims are full batches: a claim of up to BatchSize goes into a local
// queue that Concurrency consumer slots drain, and the next claim is made
// when no more than Concurrency chunks (consumer calls) are outstanding
// (queued or in flight): with chunks of up to L deliveries, at most
// Concurrency×L+BatchSize deliveries are leased by one dispatcher at once.
// Queued deliveries keep their leases: every RenewInterval/2 the dispatcher
// renews, in one round trip and under each row's own fence, the
// queued leases set RenewInterval ago or more; a slot renews the due ones
// of its chunk again as it starts it, and does not start a delivery whose
// renewal failed its fence or whose lease may end before the call's first
// renewal (it stays leased until recovery). With renewal disabled nothing
// is queued.
//
// A consumer that takes batches (the transport implements
// transport.Batcher and reports a batch limit above 1 for the
// destination) gets the claim's deliveries in chunks: consecutive
// deliveries to its destination, up to its limit, go to it in one call, so
// it can apply them and write their receipts in one transaction. A chunk
// shares the call and nothing else: each answer is verified against its own
// claimed delivery and recorded under its own fence, a lost lease or an
// error answers for that delivery alone, and the leases of a running chunk
// are renewed together, each under its fence.
//
// # Fencing
//
// Every later write — ack, retry, quarantine, lease renewal — is guarded by
// the exact term of the claim:
//
//	destination = @destination AND event_id = @event_id
//	AND current_attempt_id = @attempt_id AND lease_token = @lease_token
//	AND status = 'leased' AND lease_expires_at > clock_timestamp()
//
// and ack, retry and quarantine append the attempt's single finish in the
// same statement. Zero rows matched (or a unique violation on the finish,
// when a racing writer appended it first) is ErrLeaseLost: the late result
// is dropped and counted, never written. Every statement that appends a finish also moves the delivery out
// of leased, so a leased delivery's current attempt never has a finish; the
// fence needs no anti-join, and the finish table's primary key stays the
// backstop against a second finish. Queues that guard completion by job id or state alone let a worker
// whose job was rescued complete it anyway; here a stale worker's token no
// longer matches, and the finish table's unique key on attempt_id makes a
// second finish for one start impossible even if two writers raced past
// their checks (OB-CLAIM-2, OB-CLAIM-3).
//
// # Lease expiry recovery
//
// Recovery (Store.RecoverExpiredSince, queries/recover.sql, run by every
// dispatcher before a claim round, at most every RecoverInterval) takes the leased deliveries whose lease has expired, with
// FOR UPDATE SKIP LOCKED, appends outcome=lease_expired_unknown to their
// current attempt and returns them to pending, in one statement; the next
// claim starts a new attempt with a new token. A holder whose fenced write
// is in flight keeps its row locked, so recovery skips it; a late holder
// arriving after recovery finds the row no longer leased (or, racing,
// re-checks its fence against the updated row) and matches nothing.
// Each scan starts at the floor of the dispatcher's last complete scan, so
// it does not walk the index entries every ended lease leaves behind until
// vacuum; an unbounded scan runs every FullRecoverInterval (default: the
// lease) for the rare lease a rolled-back writer had locked during a scan.
//
// # Crash windows
//
// If a worker dies after the consumer committed but before the ack, the
// attempt is recovered as lease_expired_unknown, the delivery is claimed
// again and the consumer returns the receipt it already wrote
// (OB-DELIVER-6). Exactly-once is a property of consumer receipts, not of
// the network.
//
// # Acks
//
// An ack is accepted only after contracts' receipt.VerifyAck has checked the
// ActiveConsumerAck@1 and the receipt body against the frozen member and the
// event (OB-DELIVER-4). The ack transaction (READ COMMITTED) runs one
// set-based fenced statement for the whole batch (outbox.ack_delivery_batch,
// called by sql/delivery_ack_batch.sql:
// a primary-key probe per ack, each row guarded by its own fence) that
// appends the success finishes, sets the deliveries acknowledged and freezes
// their receipt types and quadruples; then one call of
// outbox.record_publication_batch with the acks that passed, whose
// not_complete answers are normal (OB-DELIVER-5). Verified
// acks are collected into batches of up to AckBatchSize (the consumer slot
// does not wait for its ack's commit: it starts its next delivery while the
// acker records the batch; the drain waits for every recording); a single ack
// (Store.AckOne, AckBatchSize 1) is a batch of one, so the fence lives in
// one statement. When a batch transaction fails as a whole, each of its acks
// is recorded again alone. An ack that fails verification is quarantined,
// never accepted.
//
// # Failures
//
// A failed delivery is retried (pending again after an exponential backoff
// with jitter; retries gathered like acks, up to AckBatchSize, are recorded
// by one set-based fenced statement, outbox.retry_delivery_batch through
// Store.RetryBatch, each row under its own fence with its own backoff and
// code; Store.Retry when batching is off) when its error is retryable
// (transport.RetryableAndCode; unclassified errors are retryable) and
// MaxAttempts, if set, is not reached; recoverable waits are retried
// whatever the count — data waits (a revision gap) at a bounded pace
// (WaitBackoffMax), unsupported waits (the consumer does not support the
// pair, or no consumer is wired here: transport.Unsupported) with the
// regular backoff up to BackoffMax, so they do not append an attempt pair
// every two seconds forever. Otherwise it is quarantined
// (Store.Quarantine: terminal, with an explicit quarantine row). An outcome
// the database rejects for good (data, integrity or outbox OWxxx errors) is
// quarantined as outcome_record_invalid; any other failure to record it,
// including a privilege or undefined-function error of a misdeployed
// database, leaves the attempt to lease-expiry recovery.
//
// # Statements
//
// The statements are in queries/ and the Go code that runs them is generated
// by sqlc into dbsqlc/ (sqlc.yaml; the schema is the outbox migration line).
// ClaimStatement returns the claim exactly as Claim sends it, for plan tests.
package dispatcher
