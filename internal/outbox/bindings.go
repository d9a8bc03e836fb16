package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dbsqlc"
)

// Binding is one destination binding (DS-4, OB-DELIVER-1): the consumer a
// destination maps to, the receipt contract its members expect and whether
// they freeze a projection target. The engine knows no destination: the
// product's release seeds its bindings with BindDestinationsTx, and the
// database refuses a member or delivery row whose destination is not bound
// exactly so (foreign key on members, OW016 on deliveries).
type Binding struct {
	Destination                  route.Destination
	ConsumerName                 string
	ExpectedReceiptType          string
	ExpectedReceiptSchemaVersion string
	ProjectionRequired           bool
}

func (b Binding) projectionState() string {
	if b.ProjectionRequired {
		return projectionRequired
	}
	return projectionNotApplicable
}

// The two states of a member's projection target, as stored.
const (
	projectionRequired      = "required"
	projectionNotApplicable = "not_applicable"
)

// BindDestinationsTx seeds destination bindings through the controlled
// function outbox.bind_destination: insert-or-compare, so a release may
// bind on every start. It returns how many bindings it inserted; a
// destination or consumer already bound differently is ErrBindingConflict
// (OW017). The caller's role must be the one that registers definitions.
func BindDestinationsTx(ctx context.Context, tx pgx.Tx, bindings ...Binding) (int, error) {
	inserted := 0
	for _, b := range bindings {
		ok, err := queries.DestinationBind(ctx, tx, dbsqlc.DestinationBindParams{
			Destination:                  string(b.Destination),
			ConsumerName:                 b.ConsumerName,
			ExpectedReceiptType:          b.ExpectedReceiptType,
			ExpectedReceiptSchemaVersion: b.ExpectedReceiptSchemaVersion,
			ProjectionTargetState:        b.projectionState(),
		})
		if err != nil {
			return inserted, fmt.Errorf("bind destination %s: %w", b.Destination, TranslateError(err))
		}
		if ok {
			inserted++
		}
	}
	return inserted, nil
}

// DestinationBindings lists the bindings of the database by destination.
func DestinationBindings(ctx context.Context, q db.Executor) ([]Binding, error) {
	rows, err := queries.DestinationBindings(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("destination bindings: %w", err)
	}
	out := make([]Binding, len(rows))
	for i, r := range rows {
		out[i] = Binding{
			Destination:                  route.Destination(r.Destination),
			ConsumerName:                 r.ConsumerName,
			ExpectedReceiptType:          r.ExpectedReceiptType,
			ExpectedReceiptSchemaVersion: r.ExpectedReceiptSchemaVersion,
			ProjectionRequired:           r.ProjectionTargetState == projectionRequired,
		}
	}
	return out, nil
}
