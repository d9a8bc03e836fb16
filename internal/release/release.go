// Package release is the product's release wired onto the outbox engine:
// the first full release definition (DS-7), the Operations projection
// version its core_operations members freeze, the destination bindings it
// seeds (DS-4) and the release policy every append is proved against
// (DS-9). The outbox engine knows none of these; this package passes them
// in through the engine's generic APIs.
package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
)

// Policy is the first full release's policy: the mandatory destinations of
// each pair (deliveryset.FirstReleaseRoutes).
var Policy = mustPolicy()

// Appender appends under Policy.
var Appender = outbox.NewAppender(Policy)

func mustPolicy() outbox.ReleasePolicy {
	p, err := outbox.NewReleasePolicy(deliveryset.FirstReleaseRoutes)
	if err != nil {
		panic(err)
	}
	return p
}

// AppendTx appends events in the caller's transaction under the release
// policy (outbox.Appender.AppendTx).
func AppendTx(ctx context.Context, tx pgx.Tx, events ...envelope.Envelope) (outbox.AppendResult, error) {
	return Appender.AppendTx(ctx, tx, events...)
}

// Bindings are the four destinations' bindings (route.BindingOf), in the
// fixed destination order.
func Bindings() []outbox.Binding {
	out := make([]outbox.Binding, 0, len(route.Destinations))
	for _, d := range route.Destinations {
		b, err := route.BindingOf(d)
		if err != nil {
			panic(err) // route.Destinations and the bindings are one table
		}
		out = append(out, outbox.Binding{
			Destination:                  d,
			ConsumerName:                 b.ConsumerName,
			ExpectedReceiptType:          b.ReceiptType,
			ExpectedReceiptSchemaVersion: b.ReceiptSchemaVersion,
			ProjectionRequired:           b.RequiresProjection,
		})
	}
	return out
}

// BootstrapParams set up a fresh producer database for appends.
type BootstrapParams struct {
	// ProjectionName and ProjectionVersion are the Operations projection the
	// first release's core_operations members freeze.
	ProjectionName    string
	ProjectionVersion int64
	// ReadinessProofRef is recorded as the projection version's readiness
	// proof (e.g. "bootstrap" for a new, empty projection).
	ReadinessProofRef string
	// SourceRelease is registry metadata.
	SourceRelease string
}

// BootstrapTx prepares a producer database for appends: when no definition
// is active yet, it binds the release's destinations, registers the
// projection version and marks it ready, registers the first full release
// definition (DS-7) for it and activates it — all under the activation
// lock. When a definition is already active it changes nothing and returns
// the active one, so demo and test set-up can run it on every start.
func BootstrapTx(ctx context.Context, tx pgx.Tx, p BootstrapParams) (*deliveryset.Definition, error) {
	def, err := deliveryset.FirstRelease(p.ProjectionName, p.ProjectionVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", outbox.ErrInvalidDefinition, err)
	}
	if err := outbox.LockActivationTx(ctx, tx); err != nil {
		return nil, err
	}
	active, err := outbox.ActiveDefinition(ctx, tx)
	if err == nil {
		return active.Definition, nil
	}
	if !errors.Is(err, outbox.ErrNoActiveDefinition) {
		return nil, err
	}
	if _, err := outbox.BindDestinationsTx(ctx, tx, Bindings()...); err != nil {
		return nil, err
	}
	if err := outbox.RegisterProjectionVersionTx(ctx, tx, p.ProjectionName, p.ProjectionVersion); err != nil {
		return nil, err
	}
	proof := p.ReadinessProofRef
	if proof == "" {
		proof = "bootstrap"
	}
	if err := outbox.MarkProjectionReadyTx(ctx, tx, p.ProjectionName, p.ProjectionVersion, proof); err != nil {
		return nil, err
	}
	if _, err := outbox.RegisterTx(ctx, tx, def, outbox.RegisterOpts{SourceRelease: p.SourceRelease}); err != nil {
		return nil, err
	}
	if _, err := outbox.ActivateTx(ctx, tx, def.Version); err != nil {
		return nil, err
	}
	return def, nil
}

// Bootstrap is BootstrapTx in its own transaction.
func Bootstrap(ctx context.Context, pool db.Beginner, p BootstrapParams) (*deliveryset.Definition, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (*deliveryset.Definition, error) {
		return BootstrapTx(ctx, tx, p)
	})
}
