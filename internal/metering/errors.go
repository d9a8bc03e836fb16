package metering

import "errors"

// Error codes of the input processor (the shared inbox adds its own).
const (
	// Non-retryable.
	CodePairNotConsumed      = "pair_not_consumed"
	CodePayloadInvalid       = "payload_invalid"
	CodeOwnerReadInvalid     = "owner_read_invalid"
	CodeOwnerConflict        = "owner_conflict"
	CodeEligibilityConflict  = "eligibility_fact_conflict"
	CodeAvailabilityConflict = "availability_revision_conflict"
	CodeWorkConflict         = "work_generation_conflict"
	CodeEnvelopeIdentity     = "envelope_identity_mismatch"
	// Retryable.
	CodeOwnerReadUnavailable = "owner_read_unavailable"
	CodeOwnerFactNotFound    = "owner_fact_not_found"
)

var (
	// ErrPairNotConsumed: the event pair is not one of the two this consumer decodes.
	ErrPairNotConsumed = errors.New("metering: event pair is not consumed by the input processor")
	// ErrOwnerConflict: the owner answered conflicting for the event's quadruple.
	ErrOwnerConflict = errors.New("metering: owner read answered conflicting")
	// ErrOwnerNotFound: the owner does not (yet) have the event's object.
	ErrOwnerNotFound = errors.New("metering: owner read answered not_found")
	// ErrOwnerUnavailable: the owner read failed (no answer).
	ErrOwnerUnavailable = errors.New("metering: owner read unavailable")
	// ErrEligibilityConflict: the attempt already has another eligibility fact.
	ErrEligibilityConflict = errors.New("metering: attempt already observed another eligibility fact")
	// ErrAvailabilityConflict: the same availability state version with another snapshot.
	ErrAvailabilityConflict = errors.New("metering: same availability revision, different snapshot")
	// ErrWorkConflict: a stored work generation differs from the one recomputed.
	ErrWorkConflict = errors.New("metering: stored work generation differs")
	// ErrEnvelopeIdentity: the envelope's aggregate does not match its payload.
	ErrEnvelopeIdentity = errors.New("metering: envelope aggregate does not match the payload")
)

// SQLSTATEs the metering schema raises (the database is the second guard).
const (
	// SQLStateInsertOnly: update or delete of an insert-only fact (receipts, works).
	SQLStateInsertOnly = "ME001"
	// SQLStateBackwards: a fence revision, watermark or generation moved backwards.
	SQLStateBackwards = "ME002"
	// SQLStateFenced: a fact or finish whose fencing token is not the Work's
	// latest attempt, or a fact of an already finished Work.
	SQLStateFenced = "ME003"
	// SQLStateSettlementChain: a settlement input version that is not the
	// next one, or a pointer CAS that does not advance by exactly one.
	SQLStateSettlementChain = "ME004"
	// SQLStateSettlementAtomic: at COMMIT a settlement input version lacks
	// its pointer move, its current-changed event or the event's billing
	// delivery, or names a predecessor digest that is not stored (ME-1).
	SQLStateSettlementAtomic = "ME005"
	// SQLStateValidationNotHead: a validation receipt whose answer is not the
	// dimension's Current pointer at its insert (issue 30 class 10: `current`
	// for version 1 while the pointer is at 2).
	SQLStateValidationNotHead = "ME006"
	// SQLStateValidationBody: a validation receipt whose body does not say
	// what its row and the chain say (ref, digest, operation, purpose,
	// dimension, validated and current five-tuples, result).
	SQLStateValidationBody = "ME007"
	// SQLStateSettlementEventUnbacked: at COMMIT a
	// metering.settlement-input.current-changed@1 that no stored snapshot
	// version names, or that does not carry that version (issue 30 class 11:
	// a second event for the same dimension and revision; ME-1).
	SQLStateSettlementEventUnbacked = "ME008"
	// SQLStateWorkFinished: at COMMIT an attempt started, or a queue row
	// inserted, for a finished Work (a finish is absorbing), or an attempt
	// for a Work that is not queued.
	SQLStateWorkFinished = "ME009"
	// SQLStateSupersededNotMoved: at COMMIT a superseded finish of a Work
	// whose lane has no newer generation.
	SQLStateSupersededNotMoved = "ME011"
	// SQLStatePendingWorkUnfinished: a metering.pending_works row deleted
	// while its Work has no finish (a queue row leaves only with its
	// finish; otherwise the Work is never claimed or finished again).
	SQLStatePendingWorkUnfinished = "ME012"
	// SQLStateWorkNotQueued: at COMMIT a metering.input_works row with no
	// queue row of its own lane and no finish (a Work is inserted with its
	// queue row; otherwise it is never claimed or finished).
	SQLStateWorkNotQueued = "ME013"
	// SQLStateDimensionsUncommitted: an applied eligibility finish of a
	// dispatched attempt without its registered charge dimension set or
	// while a registered dimension has no settlement input, or an awaited
	// dimension the attempt does not register (issue 32 part 4).
	SQLStateDimensionsUncommitted = "ME014"
	// SQLStateWorkBlockCause: a work block whose columns do not match its
	// Blocked@1 body (an owner branch without exactly its owner fact
	// columns, or with Metering evidence; a processing branch without its
	// evidence, or with owner columns; issue 32).
	SQLStateWorkBlockCause = "ME016"
	// SQLStateSettlementConflictForged: a SettlementInputConflictFact@1 row
	// whose body does not name its own columns, its snapshot or its owner
	// block (issue 32).
	SQLStateSettlementConflictForged = "ME017"
)
