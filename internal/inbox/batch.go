package inbox

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// BatchHooks is implemented by consumers that do part of their work once
// per batch transaction instead of once per event (ConsumeBatch only;
// Consume never calls them).
type BatchHooks interface {
	// BeginBatchTx runs after the receipt-key locks and before the first
	// event: locks every event of the batch takes anyway are taken here
	// once, so that an event whose savepoint rolls back cannot release them
	// and take them again behind a waiter holding what the batch needs.
	BeginBatchTx(ctx context.Context, tx pgx.Tx) error
	// FinishBatchTx replaces the per-event Finisher: it runs once after the
	// last event, with the events whose ApplyTx ran and committed into the
	// batch (applied or waiting, in order) and their outcomes. It is the
	// last thing before the commit, so a hot row it updates (a summary) is
	// locked only while the batch commits, never while the batch waits for
	// another lock. An error fails the whole batch (retryable).
	FinishBatchTx(ctx context.Context, tx pgx.Tx, evs []*Event, outs []Outcome) error
}

// BatchOrder is implemented by consumers whose events lock a row of an
// entity other than the event (Metering's input fence, one per attempt):
// ConsumeBatch applies a batch's events in the order of their keys, events
// of one key in their delivery order. Every batch then takes those locks
// in one order, so two batches that hold events of the same two entities
// wait for each other in one direction only, never in a cycle.
type BatchOrder interface {
	BatchOrderKey(ev *Event) string
}

// ConsumeBatch handles several deliveries in one transaction (one commit)
// and answers each exactly as Consume would; it is a
// transport.BatchConsumerFunc.
//
//   - Verification and the receipt key run first, without the database;
//     a failure is that delivery's answer.
//   - One transaction takes the receipt-key locks of every remaining
//     delivery in key order (see begin), then runs each event's steps 3-4
//     in the deliveries' order (a BatchOrder consumer's key order) inside
//     its own savepoint: an event's error or broken invariant rolls back
//     that event alone (its answer is the error Consume would give), a
//     Wait keeps its bookkeeping, an applied event keeps its effect with
//     its receipt (CON-1), the Finisher runs inside the event's savepoint
//     unless the consumer has BatchHooks.
//   - If the transaction fails as a whole (a receipt-key lock, BatchHooks,
//     the commit, the connection), nothing of it was written and every
//     delivery that reached the database gets the retryable error: a
//     replay or a conflict may have read an earlier event of the same
//     batch, and the redelivery reproduces any definite answer.
func (in *Inbox) ConsumeBatch(ctx context.Context, ds []transport.Delivery) []transport.Answer {
	out := make([]transport.Answer, len(ds))
	var (
		evs []*Event
		idx []int // idx[j]: the delivery of evs[j]
	)
	for i, d := range ds {
		ev, err := in.prepare(d)
		if err != nil {
			out[i].Err = err
			continue
		}
		evs, idx = append(evs, ev), append(idx, i)
	}
	if len(evs) == 0 {
		return out
	}
	if o, ok := in.consumer.(BatchOrder); ok {
		order := make([]int, len(evs))
		for j := range order {
			order[j] = j
		}
		keys := make([]string, len(evs))
		for j, ev := range evs {
			keys[j] = o.BatchOrderKey(ev)
		}
		slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		sorted, sortedIdx := make([]*Event, len(evs)), make([]int, len(evs))
		for j, k := range order {
			sorted[j], sortedIdx[j] = evs[k], idx[k]
		}
		evs, idx = sorted, sortedIdx
	}
	hooks, _ := in.consumer.(BatchHooks)
	answers := make([]answer, len(evs))
	failed := make([]error, len(evs))
	err := db.WithTx(ctx, in.pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := in.begin(ctx, tx, evs); err != nil {
			return err
		}
		if hooks != nil {
			if err := hooks.BeginBatchTx(ctx, tx); err != nil {
				return err
			}
		}
		var (
			ran  []*Event
			outs []Outcome
		)
		for j, ev := range evs {
			// db.WithTx on a transaction is a savepoint: released on
			// success, rolled back to on error.
			err := db.WithTx(ctx, tx, func(ctx context.Context, sp pgx.Tx) error {
				var err error
				answers[j], err = in.apply(ctx, sp, ev, hooks == nil)
				return err
			})
			if err != nil {
				failed[j] = ToDeliveryError(err)
				continue
			}
			if answers[j].ran {
				ran, outs = append(ran, ev), append(outs, answers[j].out)
			}
		}
		if hooks != nil && len(ran) > 0 {
			return hooks.FinishBatchTx(ctx, tx, ran, outs)
		}
		return nil
	})
	if err != nil {
		all := batchFailed(err)
		for _, i := range idx {
			out[i] = transport.Answer{Err: all}
		}
		return out
	}
	for j, i := range idx {
		switch a := answers[j]; {
		case failed[j] != nil:
			out[i].Err = failed[j]
		case a.wait != nil:
			out[i].Err = a.wait
		default:
			out[i].Result = a.res
		}
	}
	return out
}

// batchFailed is the answer of every delivery of a batch whose transaction
// failed: nothing was written, so it is retryable whatever its class.
func batchFailed(err error) error {
	err = ToDeliveryError(err)
	if retryable, code := transport.RetryableAndCode(err); !retryable {
		return transport.Retryable(code, err)
	}
	return err
}
