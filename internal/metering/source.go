package metering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// decodeSource strictly decodes the stored source: no unknown field, one
// document, every field but projectId present and both quadruples valid
// (fail closed: a damaged source is never read as a partial one).
func decodeSource(raw string) (eligibilitySource, error) {
	var s eligibilitySource
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return eligibilitySource{}, fmt.Errorf("eligibility source: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return eligibilitySource{}, errors.New("eligibility source: trailing data")
	}
	for name, v := range map[string]string{"tenantKind": s.TenantKind, "tenantId": s.TenantID, "workspaceId": s.WorkspaceID,
		"billingReservationId": s.BillingReservationID, "billingAccountId": s.BillingAccountID, "runId": s.RunID,
		"runStepId": s.RunStepID, "executionAttemptId": s.ExecutionAttemptID} {
		if v == "" {
			return eligibilitySource{}, fmt.Errorf("eligibility source: %s is required", name)
		}
	}
	if err := s.AttemptManifest.Validate(); err != nil {
		return eligibilitySource{}, fmt.Errorf("eligibility source: attemptExecutionManifest: %w", err)
	}
	if err := s.Fact.Validate(); err != nil {
		return eligibilitySource{}, fmt.Errorf("eligibility source: executionEligibilityFact: %w", err)
	}
	return s, nil
}
