package projector

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/projector/dbsqlc"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Projection effects recorded in projected_events.projection_effect.
const (
	EffectOperationCreated        = "operation_created"
	EffectOperationCreatedLinked  = "operation_created_reservation_linked"
	EffectReservationLinked       = "reservation_linked"
	EffectReservationPending      = "reservation_pending_unlinked"
	EffectReservationFinalized    = "reservation_finalized"
	EffectPendingReservationFinal = "pending_reservation_finalized"
)

// Identifier kinds of the exact-identifier index.
const (
	IDRunID         = "run_id"
	IDReservationID = "reservation_id"
	IDEventID       = "event_id"
	IDCorrelationID = "correlation_id"
	IDOperationID   = "operation_id"
)

type indexEntry struct{ kind, value string }

// mutation is what one applied event changed, for the log and the index.
type mutation struct {
	effect        string
	runID         string
	reservationID string
	index         []indexEntry
}

// tenant is the envelope tenant.
type tenant struct{ Kind, ID, WorkspaceID, ProjectID string }

func tenantOf(e *envelope.Envelope) tenant {
	return tenant{e.TenantKind, e.TenantID, e.WorkspaceID, e.ProjectID}
}

// runFacts are the facts of run.created@2.0 the link checks compare.
type runFacts struct {
	EventID, RunID, AccountID, ReservationID string
	Manifest                                 strict.Quadruple
	Tenant                                   tenant
	CorrelationID, OperationID               string
	OccurredAt                               time.Time
}

// walletFacts are the facts of wallet.reserved@2.0.
type walletFacts struct {
	EventID, RunID, AccountID, ReservationID string
	Manifest                                 strict.Quadruple
	Tenant                                   tenant
	CorrelationID, CausationID, OperationID  string
	EconomicIdentity, ReservedAmount         string
	OccurredAt                               time.Time
}

// finalizationFacts are the facts of billing.finalization.committed@1.
type finalizationFacts struct {
	EventID, RunID, AccountID, ReservationID string
	FenceID, OperationID                     string
	FenceRevision                            int64
	Committed                                strict.Quadruple
	Decision                                 string
	EconomicIdentity                         string
	SettledAmount, ReleasedAmount            string
	EnvelopeDigest                           digest.Digest
	OccurredAt                               time.Time
}

// mustPayload takes the typed payload of an envelope the inbox decoded
// strictly and whose pair ApplyTx dispatched on: a failure is a programming error.
func mustPayload[T any](p T, err error) T {
	if err != nil {
		panic("projector: typed payload of a decoded envelope: " + err.Error())
	}
	return p
}

// canonicalText renders a payload object as RFC 8785 text (the economic
// identity is stored and compared in this one form).
func canonicalText(v map[string]any) string {
	b, err := jcs.Marshal(v)
	if err != nil {
		panic("projector: canonicalize decoded payload: " + err.Error())
	}
	return string(b)
}

func runFrom(e *envelope.Envelope) runFacts {
	p := mustPayload(envelope.PayloadOf[envelope.RunCreatedV2_0Payload](e))
	return runFacts{
		EventID: e.EventID, RunID: p.RunID, AccountID: p.BillingAccountID,
		ReservationID: p.BillingReservationID, Manifest: p.RunAdmissionManifest(),
		Tenant: tenantOf(e), CorrelationID: e.CorrelationID, OperationID: e.OperationID, OccurredAt: e.OccurredAt,
	}
}

func walletFrom(e *envelope.Envelope) walletFacts {
	p := mustPayload(envelope.PayloadOf[envelope.WalletReservedV2_0Payload](e))
	return walletFacts{
		EventID: e.EventID, RunID: p.RunID, AccountID: p.BillingAccountID,
		ReservationID: p.BillingReservationID, Manifest: p.RunAdmissionManifest(),
		Tenant: tenantOf(e), CorrelationID: e.CorrelationID, CausationID: e.CausationID, OperationID: e.OperationID,
		EconomicIdentity: canonicalText(p.ReservationEconomicIdentity.Map()), ReservedAmount: p.ReservedAmount,
		OccurredAt: e.OccurredAt,
	}
}

func finalizationFrom(e *envelope.Envelope) finalizationFacts {
	p := mustPayload(envelope.PayloadOf[envelope.BillingFinalizationCommittedV1Payload](e))
	return finalizationFacts{
		EventID: e.EventID, RunID: p.RunID, AccountID: p.BillingAccountID,
		ReservationID: p.BillingReservationID, FenceID: p.BillingFinalizationFenceID,
		OperationID: p.BillingFinalizationOperationID, FenceRevision: p.FinalizationFenceRevision,
		Committed: p.BillingFinalizationCommitted(), Decision: p.BillingFinalizationDecision,
		EconomicIdentity: canonicalText(p.ReservationEconomicIdentity.Map()),
		SettledAmount:    p.SettledAmount, ReleasedAmount: p.ReleasedAmount,
		OccurredAt: e.OccurredAt,
	}
}

// linkMismatches lists the causal and equality checks a Run and its
// Reservation fail (OPS-3); empty means they may be linked.
func linkMismatches(r runFacts, w walletFacts) []string {
	var bad []string
	check := func(name string, ok bool) {
		if !ok {
			bad = append(bad, name)
		}
	}
	check("runId", r.RunID == w.RunID)
	check("billingReservationId", r.ReservationID == w.ReservationID)
	check("billingAccountId", r.AccountID == w.AccountID)
	check("runAdmissionManifest", r.Manifest == w.Manifest)
	check("tenant", r.Tenant == w.Tenant)
	check("correlationId", r.CorrelationID == w.CorrelationID)
	check("operationId", r.OperationID == w.OperationID)
	// Causal: the reservation, when it names its cause, was caused by the Run event.
	check("causationId", w.CausationID == "" || w.CausationID == r.EventID)
	return bad
}

func linkConflict(r runFacts, w walletFacts, bad []string) error {
	return transport.NonRetryable(CodeLinkConflict, fmt.Errorf("%w: run %s (event %s) and reservation %s (event %s) differ in %s",
		ErrLinkConflict, r.RunID, r.EventID, w.ReservationID, w.EventID, strings.Join(bad, ", ")))
}

// lockLink takes the run and reservation advisory locks (run first).
func lockLink(ctx context.Context, tx pgx.Tx, t route.ProjectionTarget, runID, reservationID string) error {
	prefix := fmt.Sprintf("operations|link|%s|%d|", t.Name, t.Version)
	keys := []string{prefix + "run|" + runID, prefix + "reservation|" + reservationID}
	if _, err := tx.Exec(ctx, qLinkLock, pgx.NamedArgs{"keys": keys}); err != nil {
		return fmt.Errorf("lock run/reservation link: %w", err)
	}
	return nil
}

// summaryRow is the part of an operation summary the link checks read.
type summaryRow struct {
	run              runFacts
	state            string
	economicIdentity *string
	reservedAmount   *string
}

func summariesByLink(ctx context.Context, tx pgx.Tx, t route.ProjectionTarget, runID, reservationID string) ([]summaryRow, error) {
	rows, err := queries.SummaryByLink(ctx, tx, dbsqlc.SummaryByLinkParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: runID, BillingReservationID: reservationID,
	})
	if err != nil {
		return nil, fmt.Errorf("read operation summary: %w", err)
	}
	out := make([]summaryRow, len(rows))
	for i, r := range rows {
		out[i] = summaryRow{
			run: runFacts{
				RunID: r.RunID, ReservationID: r.BillingReservationID, AccountID: r.BillingAccountID,
				Manifest: strict.Quadruple{Ref: r.RunAdmissionManifestRef, SchemaVersion: r.RunAdmissionManifestSchemaVersion,
					DigestAlgorithmVersion: digest.Algorithm(r.RunAdmissionManifestDigestAlgorithmVersion), Digest: r.RunAdmissionManifestDigest},
				Tenant:        tenant{Kind: r.TenantKind, ID: r.TenantID, WorkspaceID: r.WorkspaceID, ProjectID: deref(r.ProjectID)},
				CorrelationID: r.CorrelationID, OperationID: deref(r.OperationID), EventID: r.RunEventID,
			},
			state: r.ReservationState, economicIdentity: r.ReservationEconomicIdentity, reservedAmount: r.ReservedAmount,
		}
	}
	return out, nil
}

// pendingRow is a Wallet-first reservation.
type pendingRow struct {
	wallet       walletFacts
	finalization *pendingFinalization
}

type pendingFinalization struct {
	EventID                       string
	OccurredAt                    time.Time
	Decision                      string
	SettledAmount, ReleasedAmount string
}

func pendingByLink(ctx context.Context, tx pgx.Tx, t route.ProjectionTarget, runID, reservationID string) ([]pendingRow, error) {
	rows, err := queries.PendingByLink(ctx, tx, dbsqlc.PendingByLinkParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: runID, BillingReservationID: reservationID,
	})
	if err != nil {
		return nil, fmt.Errorf("read pending reservation: %w", err)
	}
	out := make([]pendingRow, len(rows))
	for i, r := range rows {
		out[i].wallet = walletFacts{
			ReservationID: r.BillingReservationID, RunID: r.RunID, AccountID: r.BillingAccountID,
			Manifest: strict.Quadruple{Ref: r.RunAdmissionManifestRef, SchemaVersion: r.RunAdmissionManifestSchemaVersion,
				DigestAlgorithmVersion: digest.Algorithm(r.RunAdmissionManifestDigestAlgorithmVersion), Digest: r.RunAdmissionManifestDigest},
			Tenant:        tenant{Kind: r.TenantKind, ID: r.TenantID, WorkspaceID: r.WorkspaceID, ProjectID: deref(r.ProjectID)},
			CorrelationID: r.CorrelationID, CausationID: deref(r.CausationID), OperationID: deref(r.OperationID),
			EventID: r.WalletEventID, OccurredAt: r.WalletOccurredAt,
			EconomicIdentity: r.ReservationEconomicIdentity, ReservedAmount: r.ReservedAmount,
		}
		if r.FinalizationEventID != nil && r.FinalizationOccurredAt != nil {
			out[i].finalization = &pendingFinalization{EventID: *r.FinalizationEventID, OccurredAt: *r.FinalizationOccurredAt,
				Decision: deref(r.BillingFinalizationDecision), SettledAmount: deref(r.SettledAmount), ReleasedAmount: deref(r.ReleasedAmount)}
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// applyRun projects run.created@2.0: the operation summary, linked to a
// waiting Wallet-first reservation when the checks pass (OPS-3).
func applyRun(ctx context.Context, tx pgx.Tx, ev *inbox.Event, r runFacts) (mutation, error) {
	t := ev.Key.Projection
	if err := lockLink(ctx, tx, t, r.RunID, r.ReservationID); err != nil {
		return mutation{}, err
	}
	existing, err := summariesByLink(ctx, tx, t, r.RunID, r.ReservationID)
	if err != nil {
		return mutation{}, err
	}
	if len(existing) > 0 {
		// Another Run already owns this run id or reservation (the run
		// aggregate itself is at revision 0 here, so it is another event).
		return mutation{}, transport.NonRetryable(CodeLinkConflict, fmt.Errorf("%w: run %s or reservation %s already belongs to run %s",
			ErrLinkConflict, r.RunID, r.ReservationID, existing[0].run.RunID))
	}
	pending, err := pendingByLink(ctx, tx, t, r.RunID, r.ReservationID)
	if err != nil {
		return mutation{}, err
	}
	m := mutation{effect: EffectOperationCreated, runID: r.RunID, reservationID: r.ReservationID,
		index: []indexEntry{{IDRunID, r.RunID}, {IDReservationID, r.ReservationID}, {IDEventID, r.EventID}, {IDCorrelationID, r.CorrelationID}}}
	if r.OperationID != "" {
		m.index = append(m.index, indexEntry{IDOperationID, r.OperationID})
	}

	state := "source_delayed"
	var (
		resEvent, resIdentity, resAmount      *string
		resAt, finAt                          *time.Time
		finEvent, finDecision, settled, relsd *string
	)
	switch len(pending) {
	case 0:
	case 1:
		w := pending[0].wallet
		// guard OPS-3.run-link-mismatch
		if bad := linkMismatches(r, w); len(bad) > 0 {
			return mutation{}, linkConflict(r, w, bad)
		}
		state = "reserved"
		resEvent, resAt, resIdentity, resAmount = &w.EventID, &w.OccurredAt, &w.EconomicIdentity, &w.ReservedAmount
		m.effect = EffectOperationCreatedLinked
		m.index = append(m.index, indexEntry{IDEventID, w.EventID})
		if f := pending[0].finalization; f != nil {
			state = "finalized"
			finEvent, finAt, finDecision, settled, relsd = &f.EventID, &f.OccurredAt, &f.Decision, &f.SettledAmount, &f.ReleasedAmount
			m.index = append(m.index, indexEntry{IDEventID, f.EventID})
		}
		if err := queries.PendingMarkLinked(ctx, tx, dbsqlc.PendingMarkLinkedParams{
			ProjectionName: t.Name, ProjectionVersion: t.Version, BillingReservationID: w.ReservationID,
			LinkedByEventID: r.EventID, Now: ev.Now,
		}); err != nil {
			return mutation{}, fmt.Errorf("mark reservation linked: %w", err)
		}
	default:
		return mutation{}, transport.NonRetryable(CodeLinkConflict, fmt.Errorf("%w: run %s matches %d waiting reservations",
			ErrLinkConflict, r.RunID, len(pending)))
	}
	err = queries.SummaryInsert(ctx, tx, dbsqlc.SummaryInsertParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: r.RunID, OperationID: nullable(r.OperationID),
		CorrelationID: r.CorrelationID, TenantKind: r.Tenant.Kind, TenantID: r.Tenant.ID, WorkspaceID: r.Tenant.WorkspaceID,
		ProjectID: nullable(r.Tenant.ProjectID), BillingAccountID: r.AccountID, BillingReservationID: r.ReservationID,
		RunAdmissionManifestRef: r.Manifest.Ref, RunAdmissionManifestSchemaVersion: r.Manifest.SchemaVersion,
		RunAdmissionManifestDigestAlgorithmVersion: string(r.Manifest.DigestAlgorithmVersion),
		RunAdmissionManifestDigest:                 r.Manifest.Digest,
		RunEventID:                                 r.EventID, RunOccurredAt: r.OccurredAt, ReservationState: state,
		ReservationEventID: resEvent, ReservationOccurredAt: resAt, ReservationEconomicIdentity: resIdentity,
		ReservedAmount: resAmount, FinalizationEventID: finEvent, FinalizationOccurredAt: finAt,
		BillingFinalizationDecision: finDecision, SettledAmount: settled, ReleasedAmount: relsd, Now: ev.Now,
	})
	if err != nil {
		return mutation{}, fmt.Errorf("insert operation summary: %w", err)
	}
	return m, nil
}

// applyWallet projects wallet.reserved@2.0: linked to its Run's summary
// after the checks, or kept in pending_unlinked_reservations (OPS-3).
func applyWallet(ctx context.Context, tx pgx.Tx, ev *inbox.Event, w walletFacts) (mutation, error) {
	t := ev.Key.Projection
	if err := lockLink(ctx, tx, t, w.RunID, w.ReservationID); err != nil {
		return mutation{}, err
	}
	summaries, err := summariesByLink(ctx, tx, t, w.RunID, w.ReservationID)
	if err != nil {
		return mutation{}, err
	}
	m := mutation{runID: w.RunID, reservationID: w.ReservationID}
	switch len(summaries) {
	case 0:
		pending, err := pendingByLink(ctx, tx, t, w.RunID, w.ReservationID)
		if err != nil {
			return mutation{}, err
		}
		// guard OPS-3.second-waiting-reservation
		if len(pending) > 0 {
			return mutation{}, transport.NonRetryable(CodeLinkConflict, fmt.Errorf("%w: run %s already has waiting reservation %s",
				ErrLinkConflict, w.RunID, pending[0].wallet.ReservationID))
		}
		err = queries.PendingInsert(ctx, tx, dbsqlc.PendingInsertParams{
			ProjectionName: t.Name, ProjectionVersion: t.Version, BillingReservationID: w.ReservationID, RunID: w.RunID,
			BillingAccountID: w.AccountID, RunAdmissionManifestRef: w.Manifest.Ref,
			RunAdmissionManifestSchemaVersion:          w.Manifest.SchemaVersion,
			RunAdmissionManifestDigestAlgorithmVersion: string(w.Manifest.DigestAlgorithmVersion),
			RunAdmissionManifestDigest:                 w.Manifest.Digest,
			TenantKind:                                 w.Tenant.Kind, TenantID: w.Tenant.ID, WorkspaceID: w.Tenant.WorkspaceID,
			ProjectID: nullable(w.Tenant.ProjectID), CorrelationID: w.CorrelationID, CausationID: nullable(w.CausationID),
			OperationID: nullable(w.OperationID), WalletEventID: w.EventID, WalletOccurredAt: w.OccurredAt,
			ReservationEconomicIdentity: w.EconomicIdentity, ReservedAmount: w.ReservedAmount, Now: ev.Now,
		})
		if err != nil {
			return mutation{}, fmt.Errorf("insert pending reservation: %w", err)
		}
		m.effect = EffectReservationPending
		return m, nil
	case 1:
		s := summaries[0]
		// guard OPS-3.wallet-link-mismatch
		if bad := linkMismatches(s.run, w); len(bad) > 0 {
			return mutation{}, linkConflict(s.run, w, bad)
		}
		if s.state != "source_delayed" {
			return mutation{}, transport.NonRetryable(CodeLinkConflict, fmt.Errorf("%w: run %s already has reservation state %s",
				ErrLinkConflict, s.run.RunID, s.state))
		}
		linked, err := queries.SummaryLinkReservation(ctx, tx, dbsqlc.SummaryLinkReservationParams{
			ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: s.run.RunID,
			ReservationEventID: &w.EventID, ReservationOccurredAt: &w.OccurredAt,
			ReservationEconomicIdentity: &w.EconomicIdentity, ReservedAmount: &w.ReservedAmount, Now: ev.Now,
		})
		if err != nil {
			return mutation{}, fmt.Errorf("link reservation: %w", err)
		}
		if linked != 1 {
			return mutation{}, errors.New("projector: link reservation: summary changed under its lock")
		}
		m.effect = EffectReservationLinked
		m.index = []indexEntry{{IDEventID, w.EventID}}
		return m, nil
	default:
		return mutation{}, transport.NonRetryable(CodeLinkConflict, fmt.Errorf("%w: run %s and reservation %s belong to different operations",
			ErrLinkConflict, w.RunID, w.ReservationID))
	}
}

// applyFinalization projects billing.finalization.committed@1 (revision 2
// of the reservation aggregate: the wallet event is already applied, linked
// or waiting for its Run).
func applyFinalization(ctx context.Context, tx pgx.Tx, ev *inbox.Event, f finalizationFacts) (mutation, error) {
	t := ev.Key.Projection
	if err := lockLink(ctx, tx, t, f.RunID, f.ReservationID); err != nil {
		return mutation{}, err
	}
	m := mutation{runID: f.RunID, reservationID: f.ReservationID}
	summaries, err := summariesByLink(ctx, tx, t, f.RunID, f.ReservationID)
	if err != nil {
		return mutation{}, err
	}
	if len(summaries) == 1 {
		s := summaries[0]
		if err := checkFinalization(f, s.run.RunID, s.run.ReservationID, s.run.AccountID, deref(s.economicIdentity), deref(s.reservedAmount), s.state == "reserved"); err != nil {
			return mutation{}, err
		}
		if err := queries.SummaryFinalize(ctx, tx, dbsqlc.SummaryFinalizeParams{
			ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: s.run.RunID,
			FinalizationEventID: &f.EventID, FinalizationOccurredAt: &f.OccurredAt, BillingFinalizationDecision: &f.Decision,
			SettledAmount: &f.SettledAmount, ReleasedAmount: &f.ReleasedAmount, Now: ev.Now,
		}); err != nil {
			return mutation{}, fmt.Errorf("finalize reservation: %w", err)
		}
		m.effect = EffectReservationFinalized
		m.index = []indexEntry{{IDEventID, f.EventID}}
		return m, nil
	}
	pending, err := pendingByLink(ctx, tx, t, f.RunID, f.ReservationID)
	if err != nil {
		return mutation{}, err
	}
	if len(summaries) > 1 || len(pending) != 1 {
		return mutation{}, transport.NonRetryable(CodeFinalizationConflict, fmt.Errorf("%w: reservation %s of run %s is not projected as one reservation",
			ErrFinalizationConflict, f.ReservationID, f.RunID))
	}
	w := pending[0].wallet
	if err := checkFinalization(f, w.RunID, w.ReservationID, w.AccountID, w.EconomicIdentity, w.ReservedAmount, pending[0].finalization == nil); err != nil {
		return mutation{}, err
	}
	finalized, err := queries.PendingFinalize(ctx, tx, dbsqlc.PendingFinalizeParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, BillingReservationID: w.ReservationID,
		FinalizationEventID: &f.EventID, FinalizationOccurredAt: &f.OccurredAt, BillingFinalizationDecision: &f.Decision,
		SettledAmount: &f.SettledAmount, ReleasedAmount: &f.ReleasedAmount,
	})
	if err != nil {
		return mutation{}, fmt.Errorf("finalize pending reservation: %w", err)
	}
	if finalized != 1 {
		return mutation{}, errors.New("projector: finalize pending reservation: row changed under its lock")
	}
	m.effect = EffectPendingReservationFinal
	return m, nil
}

// checkFinalization compares a finalization with the reservation it closes:
// same run, reservation, account and economic identity, a reservation not
// finalized yet, and settled + released = reserved.
func checkFinalization(f finalizationFacts, runID, reservationID, accountID, identity, reserved string, open bool) error {
	var bad []string
	if f.RunID != runID || f.ReservationID != reservationID {
		bad = append(bad, "runId/billingReservationId")
	}
	if f.AccountID != accountID {
		bad = append(bad, "billingAccountId")
	}
	if f.EconomicIdentity != identity {
		bad = append(bad, "reservationEconomicIdentity")
	}
	if !open {
		bad = append(bad, "reservation not open")
	}
	if !amountsAdd(f.SettledAmount, f.ReleasedAmount, reserved) {
		bad = append(bad, "settledAmount + releasedAmount != reservedAmount")
	}
	// guard OPS-3.finalization-mismatch
	if len(bad) > 0 {
		return transport.NonRetryable(CodeFinalizationConflict, fmt.Errorf("%w: reservation %s: %s",
			ErrFinalizationConflict, f.ReservationID, strings.Join(bad, ", ")))
	}
	return nil
}

// amountsAdd reports a + b = c for canonical decimal texts (exact).
func amountsAdd(a, b, c string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	z, ok3 := new(big.Rat).SetString(c)
	return ok1 && ok2 && ok3 && new(big.Rat).Add(x, y).Cmp(z) == 0
}
