package metering

import (
	"encoding/json"
	"fmt"

	"github.com/oceanway/core/contracts/strict"
)

// eligibilitySource is what the accepted eligibility event carried besides
// the fact quadruple, stored once on the input fence: the worker's
// bootstrap read is bound to exactly this event (tenant, account,
// reservation, run, step, attempt manifest and fact).
type eligibilitySource struct {
	TenantKind           string           `json:"tenantKind"`
	TenantID             string           `json:"tenantId"`
	WorkspaceID          string           `json:"workspaceId"`
	ProjectID            string           `json:"projectId,omitempty"`
	BillingReservationID string           `json:"billingReservationId"`
	BillingAccountID     string           `json:"billingAccountId"`
	RunID                string           `json:"runId"`
	RunStepID            string           `json:"runStepId"`
	ExecutionAttemptID   string           `json:"executionAttemptId"`
	AttemptManifest      strict.Quadruple `json:"attemptExecutionManifest"`
	Fact                 strict.Quadruple `json:"executionEligibilityFact"`
}

func encodeSource(s eligibilitySource) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("eligibility source: %w", err)
	}
	return string(b), nil
}

func decodeSource(raw string) (eligibilitySource, error) {
	var s eligibilitySource
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return s, fmt.Errorf("eligibility source: %w", err)
	}
	return s, nil
}
