package finalization_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/billing/finalization"
)

// stepTamper is the real BillingLedger that first stores, in the worker's
// transaction, a copy of the evaluation whose input manifest and decision
// carry another digest under the same content-derived refs, and records
// what StoreTx answered.
type stepTamper struct {
	finalization.BillingLedger
	answers *[]error
}

func (l stepTamper) tamper(ctx context.Context, tx pgx.Tx, ev *finalization.Evaluation) {
	m := *ev.Manifest
	m.Manifest.Digest = flipDigest(m.Manifest.Digest)
	forged := *ev
	forged.Manifest = &m
	*l.answers = append(*l.answers, finalization.StoreTx(ctx, tx, &forged))
	d := *ev.Decision
	d.Decision.Digest = flipDigest(d.Decision.Digest)
	forged = *ev
	forged.Decision = &d
	*l.answers = append(*l.answers, finalization.StoreTx(ctx, tx, &forged))
}

func (l stepTamper) CommitTx(ctx context.Context, tx pgx.Tx, w finalization.Work, ev *finalization.Evaluation) error {
	l.tamper(ctx, tx, ev)
	return l.BillingLedger.CommitTx(ctx, tx, w, ev)
}

func (l stepTamper) RecordTx(ctx context.Context, tx pgx.Tx, w finalization.Work, ev *finalization.Evaluation) error {
	l.tamper(ctx, tx, ev)
	return l.BillingLedger.RecordTx(ctx, tx, w, ev)
}

func flipDigest(d string) string {
	if d[0] == '0' {
		return "1" + d[1:]
	}
	return "0" + d[1:]
}

// TestGuardGoStepConflict (BI-1): a finalization step (input manifest,
// owner receipt, validation bundle, decision) is content-addressed; once a
// ref is stored, the same ref with another digest is ErrStepConflict, never
// taken as stored. Driven as the billing role in the worker's own
// transaction, after the real steps were stored, for every evaluation the
// worker records or commits; the finalization still commits once.
// Clause: BI-1.step-conflict.
func TestGuardGoStepConflict(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1200", "333")
	k.admit(t, w)
	var answers []error
	wk := finalization.NewWorker(k.pool, w.owners(), stepTamper{answers: &answers}, finalization.Config{}, nil)
	k.settle(t, w, rejected, "attempt.not_dispatched")
	_, err := k.c.Consume(t.Context(), closureDelivery(t, w))
	require.NoError(t, err)
	k.settle(t, w, dispatched, "text.input_tokens")
	k.settle(t, w, dispatched, "text.output_tokens")
	drain(t, wk)
	require.NotEmpty(t, answers)
	for _, err := range answers {
		require.ErrorIs(t, err, finalization.ErrStepConflict) // BI-1.step-conflict
	}
	got := k.committed(t)
	require.Equal(t, 1, got.count, "exactly one committed fact")
}
