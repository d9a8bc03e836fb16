// Package dispatcher delivers outbox deliveries of one producer database to
// their consumers, at least once, and records every outcome under a fence.
//
// # Claim
//
// A claim is one short transaction (one statement): it selects eligible
// deliveries — status=pending with available_at ≤ now(), or status=leased
// whose lease expired AND whose current attempt already has a finish written
// by recovery — ordered by (available_at, created_at, event_id) with
// FOR UPDATE SKIP LOCKED LIMIT batch, sets them leased with this worker as
// owner, a fresh random fencing token (lease_token), a deadline, a fresh
// attempt id and attempt_count+1, and inserts the immutable attempt start.
// Only after that commit is the consumer called, outside any transaction, so
// every window in which the consumer "may have been called" has a durable
// attempt id. There is no cursor or progress value: the work set is always
// the explicit query (OB-CLAIM-1, OB-CLAIM-4).
//
// # Fencing
//
// Every later write — ack, retry, quarantine, lease renewal — is one
// statement guarded by the exact term of the claim:
//
//	destination = $1 AND event_id = $2 AND current_attempt_id = $3
//	AND lease_token = $4 AND status = 'leased'
//	AND lease_expires_at > clock_timestamp()
//
// and appends the attempt's single finish in the same transaction. Zero rows
// matched is ErrLeaseLost: the late result is dropped and counted, never
// written. Queues that guard completion by job id or state alone let a worker
// whose job was rescued complete it anyway; here a stale worker's token no
// longer matches, and the finish table's unique key on attempt_id makes a
// second finish for one start impossible even if two writers raced past
// their checks (OB-CLAIM-2, OB-CLAIM-3).
//
// # Lease expiry recovery
//
// Recovery is a controlled primitive (outbox.recover_expired_leases): for a
// leased delivery whose lease has expired and whose current attempt has no
// finish, it appends outcome=lease_expired_unknown under a row lock. The
// delivery stays leased but becomes claimable; the next claim starts a new
// attempt with a new token. Because recovery and fenced writes lock the same
// delivery row and require opposite lease conditions, a live holder and the
// recoverer can never both finish one attempt.
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
// event (OB-DELIVER-4). The ack transaction appends the success finish, sets
// the delivery acknowledged, freezes the receipt type and quadruple and calls
// outbox.record_publication, whose not_complete answer is normal
// (OB-DELIVER-5). An ack that fails verification is quarantined, never
// accepted.
package dispatcher
