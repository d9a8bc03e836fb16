package coreapi

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/readmodel"
)

// KindCanaryProof is the kind of a canary proof.
const KindCanaryProof = "CanaryProof@1"

// The checks a canary proof records. The first three decide: until they
// hold the loop has not closed yet (409 canary_not_settled, nothing stored,
// the canary retries); the last two are facts that can only be wrong (a
// failed proof is stored).
const (
	CheckFinalized    = "reservation_finalized"
	CheckProjected    = "operations_projection_holds_reservation"
	CheckCompleteness = "operations_completeness_verified_current"
	CheckBalanced     = "settled_plus_released_equals_reserved"
	CheckUsageSettled = "usage_settled"
	CheckCommitted    = "finalization_committed_recomputes"
)

// RecordCanaryProof checks, from Core's own facts, that the run the canary
// drove closed the whole loop, and records a content-addressed
// CanaryProof@1 (AD001: immutable; its digest recomputed by PostgreSQL).
func (s Server) RecordCanaryProof(ctx context.Context, req apigen.RecordCanaryProofRequestObject) (apigen.RecordCanaryProofResponseObject, error) {
	tx, ok := api.TxOf(ctx)
	if !ok {
		return nil, errors.New("coreapi: recordCanaryProof outside its idempotent transaction")
	}
	runID, reservationID := req.Body.RunId.String(), req.Body.BillingReservationId.String()
	if s.Operations == nil {
		return nil, api.Refuse(http.StatusNotFound, api.CodeNotServedHere, "recordCanaryProof checks the Operations read model, which this process does not have (serve it where core_operations is consumed)")
	}
	v, err := billing.LookupReservation(ctx, s.Billing, reservationID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, api.Refuse(http.StatusNotFound, api.CodeNotFound, "no reservation "+reservationID)
	case err != nil:
		return nil, err
	case v.RunID != runID:
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, fmt.Sprintf("reservation %s is run %s's, not %s's", reservationID, v.RunID, runID))
	}
	// A canary proves the loop for a run it drove: the run must have been
	// admitted through this API by the same caller (its stored admitRun
	// response names the run).
	call := api.CallOf(ctx)
	if s.Public.Callers[call.Caller] {
		return nil, api.Refuse(http.StatusForbidden, api.CodeForbidden, call.Caller+" is a public caller: it records no canary proof")
	}
	admitted, err := admission.AdmittedThroughAPI(ctx, tx, call.Caller, runID)
	switch {
	case err != nil:
		return nil, err
	case !admitted:
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, fmt.Sprintf("run %s was not admitted through the API by %s: a canary proves only a run it drove", runID, call.Caller))
	}
	var checks []apigen.CanaryCheck
	add := func(name string, ok bool, detail string) {
		checks = append(checks, apigen.CanaryCheck{Name: name, Ok: ok, Detail: detail})
	}

	// Not closed yet: the canary retries.
	if v.State != "settled" && v.State != "released" {
		return nil, api.Refuse(http.StatusConflict, api.CodeCanaryNotSettled, fmt.Sprintf("%s: reservation is %s (fence %s, waiting %q)", CheckFinalized, v.State, v.FenceState, v.WaitingReason))
	}
	add(CheckFinalized, true, "reservation "+v.State)
	rm := readmodel.New(s.Operations)
	op, err := rm.Operation(ctx, runID, readmodel.Params{})
	switch {
	case errors.Is(err, readmodel.ErrNotFound):
		return nil, api.Refuse(http.StatusConflict, api.CodeCanaryNotSettled, CheckProjected+": the Operations projection has no operation for the run yet")
	case err != nil:
		return nil, err
	case op.Reservation.Finalization == nil || op.BillingReservationID != reservationID:
		return nil, api.Refuse(http.StatusConflict, api.CodeCanaryNotSettled, CheckProjected+": the projection has not absorbed the finalization yet")
	}
	add(CheckProjected, true, "decision "+op.Reservation.Finalization.Decision)
	c, err := rm.Completeness(ctx, readmodel.Params{})
	if err != nil {
		return nil, err
	}
	if c.SnapshotCurrency != readmodel.VerifiedCurrent {
		return nil, api.Refuse(http.StatusConflict, api.CodeCanaryNotSettled, fmt.Sprintf("%s: the latest completeness proof is %s", CheckCompleteness, c.SnapshotCurrency))
	}
	add(CheckCompleteness, true, readmodel.VerifiedCurrent)

	// Decided: a failure is a failed proof.
	balanced, detail := balances(v.ReservedAmount, v.SettledAmount, v.ReleasedAmount)
	add(CheckBalanced, balanced, detail)
	// A run released whole settled no usage: it proves no metering.
	settled, ok := new(big.Rat).SetString(v.SettledAmount)
	add(CheckUsageSettled, ok && settled.Sign() > 0, "settled "+v.SettledAmount)
	committed, _, err := billing.CommittedOf(ctx, s.Billing, reservationID)
	switch {
	case err != nil:
		add(CheckCommitted, false, err.Error())
	case committed.Committed.Ref != v.CommittedRef:
		add(CheckCommitted, false, fmt.Sprintf("the fence names %s, the stored fact is %s", v.CommittedRef, committed.Committed.Ref))
	default:
		add(CheckCommitted, true, committed.Committed.Ref+" "+committed.Committed.Digest)
	}
	verdict := apigen.Passed
	for _, ch := range checks {
		if !ch.Ok {
			verdict = apigen.Failed
		}
	}
	recordedAt := time.Now().UTC().Truncate(time.Microsecond)
	proof, body, err := sealCanaryProof(runID, reservationID, string(verdict), checks, v, recordedAt)
	if err != nil {
		return nil, err
	}
	if err := admission.RecordCanaryProof(ctx, tx, admission.CanaryProof{Proof: proof, RunID: runID, BillingReservationID: reservationID,
		Verdict: string(verdict), JSON: body, RecordedAt: recordedAt}); err != nil {
		return nil, err
	}
	return apigen.RecordCanaryProof201JSONResponse{Proof: api.Quad(proof), ProofBody: string(body), Verdict: verdict, Checks: checks,
		RunId: req.Body.RunId, BillingReservationId: uuid.MustParse(reservationID), RecordedAt: recordedAt}, nil
}

// balances compares settled + released with reserved, exactly (decimal).
func balances(reserved, settled, released string) (bool, string) {
	r, ok1 := new(big.Rat).SetString(reserved)
	s, ok2 := new(big.Rat).SetString(settled)
	l, ok3 := new(big.Rat).SetString(released)
	if !ok1 || !ok2 || !ok3 {
		return false, fmt.Sprintf("amounts not decimal: reserved %q settled %q released %q", reserved, settled, released)
	}
	sum := new(big.Rat).Add(s, l)
	return sum.Cmp(r) == 0, fmt.Sprintf("%s + %s = %s (reserved %s)", settled, released, sum.FloatString(6), reserved)
}

// sealCanaryProof returns the proof's canonical JSON and content address
// (ref canary-proof/<reservation>/<digest>).
func sealCanaryProof(runID, reservationID, verdict string, checks []apigen.CanaryCheck, v billing.ReservationView, at time.Time) (strict.Quadruple, []byte, error) {
	list := make([]any, 0, len(checks))
	for _, c := range checks {
		list = append(list, map[string]any{"name": c.Name, "ok": c.Ok, "detail": c.Detail})
	}
	doc := map[string]any{"kind": KindCanaryProof, "runId": runID, "billingReservationId": reservationID, "verdict": verdict,
		"reservedAmount": v.ReservedAmount, "settledAmount": v.SettledAmount, "releasedAmount": v.ReleasedAmount,
		"committedRef": v.CommittedRef, "checks": list, "recordedAt": at.Format(time.RFC3339Nano)}
	body, err := jcs.Marshal(doc)
	if err != nil {
		return strict.Quadruple{}, nil, err
	}
	d, err := digest.OfCanonical(digest.JCSSHA256V1, body)
	if err != nil {
		return strict.Quadruple{}, nil, err
	}
	return strict.Quadruple{Ref: "canary-proof/" + reservationID + "/" + d.Value, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d.Value}, body, nil
}
