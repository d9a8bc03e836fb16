package projector

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/projector/dbsqlc"
)

// ReceiptReadState is the answer of readOperationsProjectionAppliedReceipt.
type ReceiptReadState string

const (
	ReceiptFound       ReceiptReadState = "found"
	ReceiptNotFound    ReceiptReadState = "not_found"
	ReceiptConflicting ReceiptReadState = "conflicting"
)

// ErrReadScope: the request's audience/scope does not bind to a frozen event,
// definition and core_operations member (the request is refused; it is not
// an answer about the receipt).
var ErrReadScope = errors.New("projector: receipt read outside its audience/scope")

// ReceiptReadRequest is the directed read of one receipt (OPS-5): the full
// receipt quadruple to verify plus every expected coordinate. The expected
// destination, consumer, receipt contract and projection come from
// Member, which must be the event's frozen core_operations member (never
// the receipt body); Definition is the event's frozen definition quadruple;
// Workload names the producer dispatcher workload asking.
type ReceiptReadRequest struct {
	Receipt             strict.Quadruple
	Definition          deliveryset.Quadruple
	Member              route.Member
	Workload            string
	EventID             string
	EventType           string
	EventSchemaVersion  string
	EventEnvelopeDigest digest.Digest
}

// ReceiptReadResult is found{receipt} | not_found | conflicting.
type ReceiptReadResult struct {
	State ReceiptReadState
	// Receipt and Body (canonical bytes) are set when State is found.
	Receipt *receipt.OperationsProjectionAppliedReceipt
	Body    []byte
	// Reason says which comparison failed when State is conflicting.
	Reason string
}

// ReadOperationsProjectionAppliedReceipt is readOperationsProjectionAppliedReceipt
// (OPS-5): a directed read by the full receipt quadruple and the expected
// event and member. It answers found (the stored receipt decodes strictly,
// its digest recomputes and every field equals the request), not_found (no
// receipt for the key and the ref is unknown) or conflicting (anything
// else). There is deliberately no list, latest or admin variant. q is the
// core database (pool or transaction).
func ReadOperationsProjectionAppliedReceipt(ctx context.Context, q db.Executor, req ReceiptReadRequest) (ReceiptReadResult, error) {
	if err := checkReadScope(ctx, q, req); err != nil {
		return ReceiptReadResult{}, err
	}
	t := req.Member.ProjectionTarget
	row, err := queries.ReceiptByKey(ctx, q, dbsqlc.ReceiptByKeyParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, EventID: req.EventID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		other, err := queries.ReceiptByRef(ctx, q, req.Receipt.Ref)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ReceiptReadResult{State: ReceiptNotFound}, nil
		case err != nil:
			return ReceiptReadResult{}, fmt.Errorf("read receipt by ref: %w", err)
		}
		return conflicting(fmt.Sprintf("receipt ref belongs to event %s of %s@%d", other.EventID, other.ProjectionName, other.ProjectionVersion)), nil
	}
	if err != nil {
		return ReceiptReadResult{}, fmt.Errorf("read receipt: %w", err)
	}
	body := row.ReceiptBody
	stored := strict.Quadruple{Ref: row.ReceiptRef, SchemaVersion: row.ReceiptSchemaVersion,
		DigestAlgorithmVersion: digest.Algorithm(row.ReceiptDigestAlgorithmVersion), Digest: row.ReceiptDigest}
	if stored != req.Receipt {
		return conflicting("another receipt answers this event and projection"), nil
	}
	r, err := receipt.DecodeOperationsProjectionAppliedReceipt([]byte(body))
	if err != nil {
		return conflicting("stored receipt does not decode: " + err.Error()), nil
	}
	if err := r.VerifyDigest(); err != nil {
		return conflicting("stored receipt digest does not recompute"), nil
	}
	switch {
	case r.Receipt != req.Receipt:
		return conflicting("receipt body quadruple differs"), nil
	case r.Projection() != t:
		return conflicting("receipt projection differs from the frozen member's projection target"), nil
	case r.EventID != req.EventID || r.EventType != req.EventType || r.EventSchemaVersion != req.EventSchemaVersion:
		return conflicting("receipt event identity differs"), nil
	case r.EventEnvelopeDigest != req.EventEnvelopeDigest:
		return conflicting("receipt envelope digest differs"), nil
	}
	return ReceiptReadResult{State: ReceiptFound, Receipt: r, Body: []byte(body)}, nil
}

func conflicting(reason string) ReceiptReadResult {
	return ReceiptReadResult{State: ReceiptConflicting, Reason: reason}
}

// checkReadScope binds the request to the event's frozen definition and its
// core_operations member and delivery in the same database.
func checkReadScope(ctx context.Context, q db.Executor, req ReceiptReadRequest) error {
	m := req.Member
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrReadScope, fmt.Sprintf(format, args...))
	}
	switch {
	case req.Workload == "":
		return fail("no workload")
	case m.Destination != route.CoreOperations || m.ConsumerName != route.OperationsProjector:
		return fail("member %s/%s is not core_operations/operations_projector", m.Destination, m.ConsumerName)
	case m.ExpectedReceiptType != route.OperationsProjectionAppliedReceipt || m.ExpectedReceiptSchemaVersion != route.ReceiptSchemaVersion1:
		return fail("member expects %s@%s", m.ExpectedReceiptType, m.ExpectedReceiptSchemaVersion)
	case !m.ProjectionTarget.Required:
		return fail("member has no projection target")
	case m.EventType != req.EventType || m.EventSchemaVersion != req.EventSchemaVersion:
		return fail("member pair %s/%s differs from the expected event", m.EventType, m.EventSchemaVersion)
	}
	if err := req.Receipt.Validate(); err != nil {
		return fail("receipt quadruple: %v", err)
	}
	d := req.Definition
	scope, err := queries.ReceiptReadScope(ctx, q, dbsqlc.ReceiptReadScopeParams{
		EventID: req.EventID, DeliverySetVersion: d.DeliverySetVersion,
		DeliverySetDefinitionSchemaVersion:          d.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: string(d.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 d.DeliverySetDefinitionDigest,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fail("event %s is not frozen with definition %d or has no core_operations member", req.EventID, d.DeliverySetVersion)
	}
	if err != nil {
		return fmt.Errorf("read receipt scope: %w", err)
	}
	// A core_operations member always names its projection (outbox CHECK).
	projName, projVersion := deref(scope.ProjectionName), derefInt(scope.ProjectionVersion)
	deliveryProjName, deliveryProjVersion := scope.DeliveryProjectionName, scope.DeliveryProjectionVersion
	frozen := route.Required(projName, projVersion)
	switch {
	case scope.EventType != req.EventType || scope.EventSchemaVersion != req.EventSchemaVersion:
		return fail("event pair is %s/%s", scope.EventType, scope.EventSchemaVersion)
	case scope.EventEnvelopeDigestAlgorithmVersion != string(req.EventEnvelopeDigest.Algorithm) || scope.EventEnvelopeSha256 != req.EventEnvelopeDigest.Value:
		return fail("expected envelope digest is not the event's")
	case scope.ConsumerName != m.ConsumerName || scope.ExpectedReceiptType != m.ExpectedReceiptType ||
		scope.ExpectedReceiptSchemaVersion != m.ExpectedReceiptSchemaVersion || scope.Mandatory != m.Mandatory:
		return fail("member differs from the frozen definition member")
	case frozen != m.ProjectionTarget:
		return fail("member projection %s@%d differs from the frozen %s@%d", m.ProjectionTarget.Name, m.ProjectionTarget.Version, projName, projVersion)
	case deliveryProjName == nil || deliveryProjVersion == nil || *deliveryProjName != projName || *deliveryProjVersion != projVersion:
		return fail("delivery row projection differs from the frozen member")
	}
	return nil
}

func derefInt(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}
