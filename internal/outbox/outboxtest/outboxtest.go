// Package outboxtest holds the outbox's test helpers for every package that
// drives a dispatcher or its store: the invariant assertions over a producer
// database (RequireInvariants, RequireDrained, both reading package
// invariant) and one acking consumer (Ack, Consumer) that answers with a
// real, verifiable ActiveConsumerAck@1.
//
// Import it from _test.go files and other test helpers only.
package outboxtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/outbox/invariant"
	"github.com/oceanway/core/internal/outbox/invariant/dbsqlc"
)

// RequireInvariants fails t unless every invariant that holds at any
// quiescent point holds in the producer database db: at most one finish
// per attempt start, an acknowledged delivery has exactly one acknowledged
// finish (its current attempt's), published_at exact, every event has its
// deliveries. Call it when no outbox transaction is in flight.
func RequireInvariants(t testing.TB, db dbsqlc.DBTX) invariant.Report {
	t.Helper()
	return requireScope(t, db, invariant.Quiescent)
}

// RequireDrained fails t unless the outbox is drained and consistent: every
// quiescent invariant, plus every delivery acknowledged, every attempt
// finished, every event published and nothing quarantined.
func RequireDrained(t testing.TB, db dbsqlc.DBTX) invariant.Report {
	t.Helper()
	return requireScope(t, db, invariant.Drained)
}

func requireScope(t testing.TB, db dbsqlc.DBTX, scope invariant.Scope) invariant.Report {
	t.Helper()
	r, err := invariant.Evaluate(context.Background(), db)
	require.NoError(t, err)
	require.NoError(t, r.Err(scope))
	return r
}
