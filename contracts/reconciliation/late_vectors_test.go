package reconciliation_test

// Frozen derivation vectors (append-only: a change of inputs is a new
// derivation name, never a new value for an old one).
const (
	lateCommandOperationVector    = "494c9a01-d9cf-858f-a6b7-6f132d2e6679"
	caseResolutionOperationVector = "d566e903-b050-8e76-b9f7-cbe865109c5d"
)
