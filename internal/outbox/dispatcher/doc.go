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
// # Fencing
//
// Every later write — ack, retry, quarantine, lease renewal — is guarded by
// the exact term of the claim:
//
//	destination = $1 AND event_id = $2 AND current_attempt_id = $3
//	AND lease_token = $4 AND status = 'leased'
//	AND lease_expires_at > clock_timestamp()
//
// and appends the attempt's single finish in the same statement. Zero rows
// matched is ErrLeaseLost: the late result is dropped and counted, never
// written. Every statement that appends a finish also moves the delivery out
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
// Recovery (Store.RecoverExpired, sql/recover.sql, run by every dispatcher on
// a timer) takes the leased deliveries whose lease has expired, with
// FOR UPDATE SKIP LOCKED, appends outcome=lease_expired_unknown to their
// current attempt and returns them to pending, in one statement; the next
// claim starts a new attempt with a new token. A holder whose fenced write
// is in flight keeps its row locked, so recovery skips it; a late holder
// arriving after recovery finds the row no longer leased (or, racing,
// re-checks its fence against the updated row) and matches nothing.
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
