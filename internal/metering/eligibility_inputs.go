package metering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// dimensionInput is everything one charge dimension's snapshot is built from.
type dimensionInput struct {
	// availability is the strictly decoded snapshot of the bootstrap read
	// (nil for not_dispatched): what the current validation names.
	availability *contract.AvailabilitySnapshot
	key          string
	price        settlement.Price
	basis        settlement.UsageBasis
	quantity     string // "0" unless available
	evidence     *contract.ProviderEvidence
}

// eligibilityInputs is the bootstrap of one eligibility Work.
type eligibilityInputs struct {
	source eligibilitySource
	fact   *contract.ExecutionEligibilityFact
	// economic is the identity the cited RunAdmissionManifest froze.
	economic settlement.EconomicIdentity
	dims     []dimensionInput
	// registered is the charge dimension set the dispatched attempt's
	// manifest froze; awaiting are its dimensions without Gateway usage yet.
	registered *registeredSet
	awaiting   []string
}

func (p *Processor) processEligibilityWork(ctx context.Context, a *Attempt) (Outcome, error) {
	h := a.Head
	// Bootstrap read: the fence and usage watermarks the Work was scheduled on.
	fence, usage, err := p.peek(ctx, h.ExecutionAttemptID)
	if err != nil {
		return Outcome{}, err
	}
	if fence.LatestEligibilityWorkGeneration > h.WorkGeneration {
		f, err := FinishSupersededIfMoved(ctx, p.pool, a)
		return Outcome{Finished: f}, err
	}
	in, err := p.eligibilityInputs(ctx, h.ExecutionAttemptID, fence, usage)
	var c *conflict
	if errors.As(err, &c) {
		return p.block(ctx, a, in, c)
	}
	var oc *ownerConflictError
	if errors.As(err, &oc) && oc.fact != nil {
		return p.ownerBlock(ctx, a, oc)
	}
	if err != nil {
		return Outcome{}, err
	}
	if len(in.awaiting) > 0 {
		out, err := p.awaitEvidence(ctx, a, in)
		if errors.As(err, &c) {
			return p.block(ctx, a, in, c)
		}
		return out, err
	}
	// Second stage: the bootstrap answers cannot complete the Work; the
	// Gateway's operation-bound Current Receipt of every availability the
	// basis uses must say current.
	err = p.validateUsage(ctx, h, in)
	if errors.As(err, &c) {
		return p.block(ctx, a, in, c)
	}
	if errors.Is(err, ErrAvailabilityNotCurrent) {
		// A newer availability is Current: if its event already moved the
		// lane, this Work is superseded (the same finish body the input
		// processor writes); if not, it is on its way: nothing is written.
		f, serr := FinishSupersededIfMoved(ctx, p.pool, a)
		if serr == nil {
			return Outcome{Finished: f}, nil
		}
		if !errors.Is(serr, ErrNotSuperseded) {
			return Outcome{}, serr
		}
		return Outcome{}, err
	}
	if err != nil {
		return Outcome{}, err
	}
	out, err := p.applyEligibility(ctx, a, in)
	// A conflict found inside the processing transaction (an amount that
	// cannot be computed, a snapshot that does not seal) is as deterministic
	// as one found by the reads: its transaction rolled back, so the attempt
	// writes Blocked@1 in its own transaction instead of retrying forever.
	if errors.As(err, &c) {
		return p.block(ctx, a, in, c)
	}
	return out, err
}

func (p *Processor) peek(ctx context.Context, attemptID string) (*fenceRow, []usageRow, error) {
	type peeked struct {
		f *fenceRow
		u []usageRow
	}
	r, err := db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (peeked, error) {
		rows, err := tx.Query(ctx, qFencePeek, pgx.NamedArgs{"attempt_id": attemptID})
		if err != nil {
			return peeked{}, fmt.Errorf("read input fence: %w", err)
		}
		f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[fenceRow])
		if err != nil {
			return peeked{}, fmt.Errorf("read input fence %s: %w", attemptID, err)
		}
		u, err := usageOf(ctx, tx, attemptID)
		return peeked{f, u}, err
	})
	return r.f, r.u, err
}

// eligibilityInputs makes the event-bound owner reads (outside any
// transaction): the eligibility fact, then for a dispatched attempt every
// usage availability snapshot and, when available, its provider evidence.
// A read that does not answer is retryable; a conflicting answer or a
// mapping the price book refuses is a local conflict (Blocked@1).
func (p *Processor) eligibilityInputs(ctx context.Context, attemptID string, f *fenceRow, usage []usageRow) (*eligibilityInputs, error) {
	if f.EligibilitySource == nil || f.DispatchDisposition == nil {
		return nil, fmt.Errorf("%w: %s", ErrEligibilitySource, attemptID)
	}
	src, err := decodeSource(*f.EligibilitySource)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrEligibilitySource, attemptID, err)
	}
	in := &eligibilityInputs{source: src}
	req := executionread.EligibilityFactRead{ContractVersion: executionread.ReadEligibilityFactV1, Audience: executionread.AudienceMeteringInput,
		BillingReservationID: src.BillingReservationID, BillingAccountID: src.BillingAccountID, RunID: src.RunID,
		RunStepID: src.RunStepID, ExecutionAttemptID: src.ExecutionAttemptID, AttemptManifest: src.AttemptManifest, Fact: src.Fact}
	res, err := p.reads.ReadEligibilityFact(ctx, req)
	if err != nil {
		if errors.Is(err, ownerread.ErrInvalidRequest) {
			return in, &conflict{stage: "eligibility_basis", reason: "eligibility_read_invalid", candidate: eligibilityReadDoc(req)}
		}
		return in, retryable("eligibility read: %v", err)
	}
	switch res.Answer {
	case ownerread.Found:
	case ownerread.NotFound:
		return in, retryable("eligibility fact %s not found", src.Fact.Ref)
	default:
		if res.Conflict != nil && res.Conflict.ExecutionAttemptID == src.ExecutionAttemptID && res.Conflict.RequestedFact == src.Fact {
			// Execution's stored conflict fact about exactly this fact (issue 32).
			return in, &ownerConflictError{cause: receipt.CauseExecutionEligibilityOwnerConflict, reason: res.Reason, fact: &res.Conflict.Fact}
		}
		return in, ownerConflict(receipt.CauseExecutionEligibilityOwnerConflict, res.Reason)
	}
	in.fact = res.Value
	if in.fact.Disposition != *f.DispatchDisposition {
		return in, &conflict{stage: "eligibility_basis", reason: "disposition_differs", candidate: in.fact.ToJSON()}
	}
	if in.economic, err = p.economicIdentity(ctx, src, in.fact); err != nil {
		return in, err
	}
	if in.fact.Disposition == contract.DispositionNotDispatched {
		price, err := settlement.PriceOf(settlement.ChargeDimensionNotDispatched)
		if err != nil {
			return in, &conflict{stage: "settlement_input", reason: "charge_dimension_not_registered", candidate: map[string]any{"chargeDimensionKey": settlement.ChargeDimensionNotDispatched}}
		}
		in.dims = []dimensionInput{{key: settlement.ChargeDimensionNotDispatched, price: price, quantity: "0",
			basis: settlement.UsageBasis{Kind: settlement.BasisNotDispatched, NotDispatchedFact: in.fact.NotDispatched}}}
		return in, nil
	}
	if in.registered, err = p.registeredDimensions(ctx, src); err != nil {
		return in, err
	}
	seen := map[string]bool{}
	for _, u := range usage {
		// guard ME-1.dimension-not-registered
		if !slices.Contains(in.registered.keys, u.EvidenceDimensionKey) {
			return in, &conflict{stage: "settlement_input", reason: "charge_dimension_not_registered", candidate: map[string]any{
				"chargeDimensionKey": u.EvidenceDimensionKey, "chargeDimensionKeys": anySlice(in.registered.keys)}}
		}
		d, err := p.usageDimension(ctx, src, u)
		if err != nil {
			return in, err
		}
		if seen[d.key] {
			return in, &conflict{stage: "settlement_input", reason: "charge_dimension_ambiguous", candidate: map[string]any{"chargeDimensionKey": d.key}}
		}
		seen[d.key] = true
		in.dims = append(in.dims, d)
	}
	sort.Slice(in.dims, func(i, j int) bool { return in.dims[i].key < in.dims[j].key })
	for _, k := range in.registered.keys {
		if !seen[k] {
			in.awaiting = append(in.awaiting, k)
		}
	}
	return in, nil
}

func (p *Processor) usageDimension(ctx context.Context, src eligibilitySource, u usageRow) (dimensionInput, error) {
	snapQ := strict.Quadruple{Ref: u.CurrentAvailabilityRef, SchemaVersion: contract.SchemaVersion1,
		DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: u.CurrentAvailabilityDigest}
	req := gatewayread.AvailabilitySnapshotRead{ContractVersion: gatewayread.ReadAvailabilitySnapshotV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: src.ExecutionAttemptID, GatewayDeploymentID: u.GatewayDeploymentID, AttemptManifest: src.AttemptManifest,
		EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: u.EvidenceDimensionKey, StateVersion: u.StateVersion, Snapshot: snapQ}
	res, err := p.reads.ReadAvailabilitySnapshot(ctx, req)
	switch {
	case err != nil && errors.Is(err, ownerread.ErrInvalidRequest):
		return dimensionInput{}, &conflict{stage: "eligibility_basis", reason: "availability_read_invalid", candidate: availabilityReadDoc(req)}
	case err != nil:
		return dimensionInput{}, retryable("availability read: %v", err)
	case res.Answer == ownerread.NotFound:
		return dimensionInput{}, retryable("availability %s not found", snapQ.Ref)
	case res.Answer != ownerread.Found:
		return dimensionInput{}, ownerConflict(receipt.CauseGatewayUsageOwnerConflict, res.Reason)
	}
	snap := res.Value
	price, err := settlement.PriceOf(u.EvidenceDimensionKey)
	if err != nil {
		return dimensionInput{}, &conflict{stage: "meter_event", reason: "charge_dimension_not_registered", candidate: map[string]any{"chargeDimensionKey": u.EvidenceDimensionKey}}
	}
	d := dimensionInput{availability: snap, key: u.EvidenceDimensionKey, price: price, quantity: "0", basis: settlement.UsageBasis{
		Kind: settlement.BasisGatewayUsage, GatewayDeploymentID: u.GatewayDeploymentID, AttemptRouteBinding: snap.Binding,
		GatewayRouteSnapshot: snap.RouteSnapshot, CurrentAvailability: snap.Snapshot, AvailabilityStateVersion: snap.StateVersion,
		AvailabilityState: snap.State}}
	if snap.State != contract.AvailabilityAvailable {
		return d, nil
	}
	ereq := gatewayread.ProviderEvidenceRead{ContractVersion: gatewayread.ReadProviderEvidenceV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: src.ExecutionAttemptID, GatewayDeploymentID: u.GatewayDeploymentID, Binding: snap.Binding,
		EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: u.EvidenceDimensionKey, Evidence: snap.Evidence}
	eres, err := p.reads.ReadProviderEvidence(ctx, ereq)
	switch {
	case err != nil && errors.Is(err, ownerread.ErrInvalidRequest):
		return d, &conflict{stage: "meter_event", reason: "evidence_read_invalid", candidate: evidenceReadDoc(ereq)}
	case err != nil:
		return d, retryable("evidence read: %v", err)
	case eres.Answer == ownerread.NotFound:
		return d, retryable("evidence %s not found", snap.Evidence.Ref)
	case eres.Answer != ownerread.Found && eres.Conflict != nil:
		// The Gateway's stored conflict fact about exactly this evidence.
		if eres.Conflict.Evidence != snap.Evidence || eres.Conflict.ExecutionAttemptID != src.ExecutionAttemptID {
			return d, ownerConflict(receipt.CauseGatewayUsageOwnerConflict, "the conflict fact names other evidence")
		}
		return d, &ownerConflictError{cause: receipt.CauseGatewayUsageOwnerConflict, reason: eres.Reason, fact: &eres.Conflict.Fact}
	case eres.Answer != ownerread.Found:
		return d, ownerConflict(receipt.CauseGatewayUsageOwnerConflict, eres.Reason)
	}
	ev := eres.Value
	d.basis.ProviderEvidence = &ev.Evidence
	d.evidence, d.quantity = ev, ev.Quantity
	return d, nil
}

// ownerConflict is an owner read's conflicting answer, by the Blocked@1
// cause it belongs to (never recorded as Metering's own processing conflict).
func ownerConflict(cause, reason string) error {
	return &ownerConflictError{cause: cause, reason: reason}
}

// ownerConflictError is an owner read's conflicting answer: the Blocked@1
// cause it belongs to and, when the owner returned its stored conflict
// fact, that fact's quadruple (the attempt then writes Blocked@1 on it).
// Without a fact it is ErrOwnerConflictUnbound: nothing is written.
type ownerConflictError struct {
	cause, reason string
	fact          *strict.Quadruple
}

func (e *ownerConflictError) Error() string {
	if e.fact == nil {
		return fmt.Sprintf("%v: %s: %s", ErrOwnerConflictUnbound, e.cause, e.reason)
	}
	return fmt.Sprintf("%v: %s: %s (fact %s)", ErrOwnerConflict, e.cause, e.reason, e.fact.Ref)
}

func (e *ownerConflictError) Unwrap() error {
	if e.fact == nil {
		return ErrOwnerConflictUnbound
	}
	return ErrOwnerConflict
}

// The read request documents below are the JCS form of what Metering asked
// an owner; an invalid request is Metering's own deterministic conflict, and
// the digest of this form is the evidence's conflicting candidate digest.

func eligibilityReadDoc(r executionread.EligibilityFactRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "billingReservationId": r.BillingReservationID,
		"billingAccountId": r.BillingAccountID, "runId": r.RunID, "runStepId": r.RunStepID, "executionAttemptId": r.ExecutionAttemptID}
	r.AttemptManifest.Put(m, settlement.PrefixAttemptExecutionManifest)
	r.Fact.Put(m, settlement.PrefixExecutionEligibilityFact)
	return m
}

func availabilityReadDoc(r gatewayread.AvailabilitySnapshotRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "executionAttemptId": r.ExecutionAttemptID,
		"gatewayDeploymentId": r.GatewayDeploymentID, "providerEvidenceKind": r.EvidenceKind, "evidenceDimensionKey": r.DimensionKey,
		"currentAvailabilityStateVersion": r.StateVersion}
	r.AttemptManifest.Put(m, settlement.PrefixAttemptExecutionManifest)
	r.Snapshot.Put(m, settlement.PrefixCurrentAvailability)
	return m
}

func evidenceReadDoc(r gatewayread.ProviderEvidenceRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "executionAttemptId": r.ExecutionAttemptID,
		"gatewayDeploymentId": r.GatewayDeploymentID, "providerEvidenceKind": r.EvidenceKind, "evidenceDimensionKey": r.DimensionKey}
	r.Binding.Put(m, settlement.PrefixAttemptRouteBinding)
	r.Evidence.Put(m, settlement.PrefixProviderEvidence)
	return m
}

// --- the processing transaction -----------------------------------------
