package outbox

import (
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oceanway/core/contracts/deliveryset"
)

// Errors of the append path, the registry, the bindings and the cutover.
// Every outcome a caller can act on wraps one of these (errors.Is); the
// database's own invariant violations (SQLSTATE class OW, listed at the top
// of migration 00002 and in docs/outbox-storage.md) become a sentinel through
// TranslateError. Driver errors keep their *pgconn.PgError in the chain so
// tests can assert the SQLSTATE (db.SQLState).
var (
	// ErrInvalidEnvelope: an event failed strict contract validation
	// (OB-APPEND-4); the contracts error is wrapped too.
	ErrInvalidEnvelope = errors.New("outbox: invalid event envelope")
	// ErrDuplicateEventID: two events of one append, or an event already
	// stored, share an event id.
	ErrDuplicateEventID = errors.New("outbox: duplicate event id")
	// ErrNoActiveDefinition: the database has no active Delivery Set
	// Definition, so nothing can be appended (DS-9).
	ErrNoActiveDefinition = errors.New("outbox: no active delivery set definition")
	// ErrPairNotInDefinition: the active definition does not list the exact
	// event pair (DS-9, OB-APPEND-4). Also matches deliveryset.ErrPairNotApplicable.
	ErrPairNotInDefinition = errors.New("outbox: event pair is not in the active delivery set definition")
	// ErrMemberMissing: the active definition lists the pair but lacks one
	// of the pair's mandatory members (DS-9).
	ErrMemberMissing = errors.New("outbox: active delivery set definition lacks a mandatory member of the pair")

	// ErrInvalidDefinition: a definition failed contract validation.
	ErrInvalidDefinition = errors.New("outbox: invalid delivery set definition")
	// ErrDefinitionConflict: same deliverySetVersion, different candidate or
	// digest (DS-6). Also matches deliveryset.ErrVersionConflict.
	ErrDefinitionConflict = errors.New("outbox: delivery set version already registered with another definition")
	// ErrDefinitionNotFound: no registered definition with that version.
	ErrDefinitionNotFound = errors.New("outbox: delivery set definition not registered")
	// ErrProjectionNotReady: a projection version is unknown or not marked
	// ready (DS-8).
	ErrProjectionNotReady = errors.New("outbox: projection version is not ready")
	// ErrProjectionMismatch: the definition does not reference exactly the
	// projection version the pointer (or the cutover) requires (DS-8).
	ErrProjectionMismatch = errors.New("outbox: definition projection target does not match the projection pointer")

	// Database invariants (custom SQLSTATEs OW001..OW019, OW011 reserved and
	// never raised; see docs/outbox-storage.md).
	ErrImmutable              = errors.New("outbox: immutable column changed")                                            // OW001
	ErrAppendOnly             = errors.New("outbox: delete or truncate of an append-only table")                          // OW002
	ErrInsertOnly             = errors.New("outbox: update of an insert-only fact")                                       // OW003
	ErrDeliverySetMismatch    = errors.New("outbox: delivery rows differ from the frozen definition's mandatory members") // OW004
	ErrDeliveryOutsideAppend  = errors.New("outbox: delivery row created outside its event's append transaction")         // OW005
	ErrDefinitionNotActive    = errors.New("outbox: frozen definition is not the active one or does not list the pair")   // OW006
	ErrPublishedAtGuard       = errors.New("outbox: published_at may only go NULL → completion time once")                // OW007
	ErrTerminalDelivery       = errors.New("outbox: delivery is terminal")                                                // OW008
	ErrPublicationInvalid     = errors.New("outbox: record_publication rejected the ack")                                 // OW009
	ErrDefinitionIncomplete   = errors.New("outbox: definition rows incomplete or member outside registration")           // OW010
	ErrNotInitialState        = errors.New("outbox: row inserted in a non-initial state")                                 // OW012
	ErrIsolationLevel         = errors.New("outbox: controlled function needs READ COMMITTED")                            // OW013
	ErrQuarantineInconsistent = errors.New("outbox: quarantine row and delivery state disagree")                          // OW014
	ErrPublicationMissing     = errors.New("outbox: all mandatory deliveries acknowledged but published_at not recorded") // OW015
	// ErrUnboundDestination: a delivery row (OW016) or a definition member
	// (foreign key delivery_set_members_binding) names a destination,
	// consumer, receipt contract or projection branch no binding has (DS-4).
	ErrUnboundDestination = errors.New("outbox: no destination binding matches") // OW016
	// ErrBindingConflict: a destination or consumer is already bound
	// differently (OW017); bindings are immutable.
	ErrBindingConflict = errors.New("outbox: destination already bound differently") // OW017
	// ErrEnvelopeContradiction: an event column derived from the envelope
	// (ids, type, schema version, aggregate, tenant, occurred-at, payload)
	// differs from the stored envelope (OW018, OB-STORE-2).
	ErrEnvelopeContradiction = errors.New("outbox: event column contradicts its envelope") // OW018
	// ErrUnprovenTransition: a delivery state change that is not one of the
	// dispatcher's proven transitions — a lease without its attempt start,
	// an ack without a valid lease, its acknowledged finish or the event's
	// envelope digest, a return to pending or a quarantine without a finish
	// (OW019, OB-STORE-6).
	ErrUnprovenTransition = errors.New("outbox: delivery state change is not a proven transition") // OW019
)

// SQLSTATEs raised by the outbox triggers and functions.
const (
	CodeImmutable              = "OW001"
	CodeAppendOnly             = "OW002"
	CodeInsertOnly             = "OW003"
	CodeDeliverySetMismatch    = "OW004"
	CodeDeliveryOutsideAppend  = "OW005"
	CodeDefinitionNotActive    = "OW006"
	CodePublishedAtGuard       = "OW007"
	CodeTerminalDelivery       = "OW008"
	CodePublicationInvalid     = "OW009"
	CodeDefinitionIncomplete   = "OW010"
	CodeNotInitialState        = "OW012"
	CodeIsolationLevel         = "OW013"
	CodeQuarantineInconsistent = "OW014"
	CodePublicationMissing     = "OW015"
	CodeUnboundDestination     = "OW016"
	CodeBindingConflict        = "OW017"
	CodeEnvelopeContradiction  = "OW018"
	CodeUnprovenTransition     = "OW019"
)

// memberBindingConstraint is the foreign key from a definition member to
// its destination binding.
const memberBindingConstraint = "delivery_set_members_binding"

var codeErrors = map[string]error{
	CodeImmutable:              ErrImmutable,
	CodeAppendOnly:             ErrAppendOnly,
	CodeInsertOnly:             ErrInsertOnly,
	CodeDeliverySetMismatch:    ErrDeliverySetMismatch,
	CodeDeliveryOutsideAppend:  ErrDeliveryOutsideAppend,
	CodeDefinitionNotActive:    ErrDefinitionNotActive,
	CodePublishedAtGuard:       ErrPublishedAtGuard,
	CodeTerminalDelivery:       ErrTerminalDelivery,
	CodePublicationInvalid:     ErrPublicationInvalid,
	CodeDefinitionIncomplete:   ErrDefinitionIncomplete,
	CodeNotInitialState:        ErrNotInitialState,
	CodeIsolationLevel:         ErrIsolationLevel,
	CodeQuarantineInconsistent: ErrQuarantineInconsistent,
	CodePublicationMissing:     ErrPublicationMissing,
	CodeUnboundDestination:     ErrUnboundDestination,
	CodeBindingConflict:        ErrBindingConflict,
	CodeEnvelopeContradiction:  ErrEnvelopeContradiction,
	CodeUnprovenTransition:     ErrUnprovenTransition,
}

// TranslateError maps an outbox SQLSTATE (OW001..OW019; OW011 is
// reserved and never raised) to its sentinel, and a member's violated
// binding foreign key to ErrUnboundDestination, keeping the driver error in
// the chain. Deferred checks fail at COMMIT, so callers that want errors.Is
// on a commit error pass it through here. Other errors are returned
// unchanged.
func TranslateError(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return err
	}
	sentinel, ok := codeErrors[pgErr.Code]
	if pgErr.Code == pgerrcode.ForeignKeyViolation && pgErr.ConstraintName == memberBindingConstraint {
		sentinel, ok = ErrUnboundDestination, true
	}
	if ok && !errors.Is(err, sentinel) {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}

// InvalidEnvelopeError names the event (by position in the append) whose
// envelope failed validation.
type InvalidEnvelopeError struct {
	Index   int
	EventID string
	Err     error
}

func (e *InvalidEnvelopeError) Error() string {
	return fmt.Sprintf("outbox: event %d (%s): invalid envelope: %v", e.Index, e.EventID, e.Err)
}

func (e *InvalidEnvelopeError) Unwrap() []error { return []error{ErrInvalidEnvelope, e.Err} }

// PairNotInDefinitionError is DS-9's "pair missing" with its coordinates.
type PairNotInDefinitionError struct {
	EventType          string
	EventSchemaVersion string
	Definition         deliveryset.Quadruple
}

func (e *PairNotInDefinitionError) Error() string {
	return fmt.Sprintf("outbox: event pair %s %s is not in active delivery set definition %d",
		e.EventType, e.EventSchemaVersion, e.Definition.DeliverySetVersion)
}

func (e *PairNotInDefinitionError) Unwrap() []error {
	return []error{ErrPairNotInDefinition, deliveryset.ErrPairNotApplicable}
}

// MemberMissingError is DS-9's "member missing" with its coordinates.
type MemberMissingError struct {
	EventType          string
	EventSchemaVersion string
	Destination        string
	Definition         deliveryset.Quadruple
}

func (e *MemberMissingError) Error() string {
	return fmt.Sprintf("outbox: active delivery set definition %d has no mandatory %s member for %s %s",
		e.Definition.DeliverySetVersion, e.Destination, e.EventType, e.EventSchemaVersion)
}

func (e *MemberMissingError) Unwrap() error { return ErrMemberMissing }

// DefinitionConflictError is DS-6's rejection of a same-version, different
// definition registration.
type DefinitionConflictError struct {
	Stored   deliveryset.Quadruple
	Incoming deliveryset.Quadruple
}

func (e *DefinitionConflictError) Error() string {
	return fmt.Sprintf("outbox: deliverySetVersion %d is registered with digest %s:%s, not %s:%s",
		e.Stored.DeliverySetVersion, e.Stored.DeliverySetDefinitionDigestAlgorithmVersion, e.Stored.DeliverySetDefinitionDigest,
		e.Incoming.DeliverySetDefinitionDigestAlgorithmVersion, e.Incoming.DeliverySetDefinitionDigest)
}

func (e *DefinitionConflictError) Unwrap() []error {
	return []error{ErrDefinitionConflict, deliveryset.ErrVersionConflict}
}
