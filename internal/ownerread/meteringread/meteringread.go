// Package meteringread is the Metering owner's reads as Billing calls them:
// the requests and answers, with no database behind them. The Metering
// owner answers them (metering.Reads, in process); Billing depends only on
// this package and on a Reader, so it never imports the Metering owner nor
// holds its DSN.
package meteringread

import (
	"context"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
)

// Reader is every read the Metering owner answers for Billing.
type Reader interface {
	// ReadAttemptSettlementInputs returns the Current settlement input of
	// every settlement dimension of one attempt.
	ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*SettlementInput, error)
	// ReadCurrentSettlementInput returns a dimension's Current snapshot
	// (readCurrentSettlementInput).
	ReadCurrentSettlementInput(ctx context.Context, settlementDimensionID string) (*SettlementInput, error)
	// ReadSettlementInputAt returns a dimension's snapshot at one state
	// version (its lineage).
	ReadSettlementInputAt(ctx context.Context, settlementDimensionID string, stateVersion int64) (*SettlementInput, error)
	// ValidateSettlementInputCurrent is validateSettlementInputCurrent: one
	// immutable receipt per operation.
	ValidateSettlementInputCurrent(ctx context.Context, req SettlementValidationRequest) (SettlementValidation, error)
}

// SettlementInput is one stored SettlementInputSnapshot@1: its five-tuple,
// its canonical body and the decoded snapshot.
type SettlementInput struct {
	Ref      settlement.Ref
	Body     []byte
	Snapshot *settlement.Snapshot
}

// SettlementValidationRequest is validateSettlementInputCurrent's request.
type SettlementValidationRequest struct {
	// Purpose is one of meterfacts.Purposes.
	Purpose string
	// OperationID is the caller's operation (UUID): one receipt per operation.
	OperationID string
	// SettlementDimensionID is envelope.SettlementDimensionID of the dimension.
	SettlementDimensionID string
	// Snapshot is the five-tuple to validate.
	Snapshot settlement.Ref
	// InputManifestDigest is the caller's input manifest (or basis) digest.
	InputManifestDigest digest.Digest
}

// SettlementValidation is the answer: the receipt, its stored canonical
// bytes (byte-identical on every replay of the operation), and the
// dimension's Current five-tuple at the receipt's linearization point (the
// validated one when Receipt.Current).
//
// For the catch-up purposes (billing_catch_up_fence,
// post_finalization_transition) Metering may instead answer conflicting:
// Receipt is nil and Conflict is its stored SettlementInputConflictFact@1
// (with its canonical body), when the dimension's attempt has an
// eligibility Work Blocked@1 on an owner's conflict fact (issue 32). The
// finalization purpose is never answered so.
type SettlementValidation struct {
	Receipt      *meterfacts.SettlementInputCurrentValidationReceipt
	Body         []byte
	Current      settlement.Ref
	Conflict     *meterfacts.SettlementInputConflictFact
	ConflictBody []byte
}
