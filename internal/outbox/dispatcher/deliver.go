package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/internal/outbox/transport"
)

// process delivers claimed attempts of one destination in one consumer
// call — one delivery through Transport.Deliver, a chunk through
// transport.Batcher — and records each outcome on its own: a chunk shares
// the call, never a fence.
func (d *Dispatcher) process(ctx context.Context, cs []Claimed) {
	started := cs[:0:0]
	for _, c := range cs {
		if d.hooks.BeforeDeliver != nil && errors.Is(d.hooks.BeforeDeliver(c), ErrSimulatedCrash) {
			continue
		}
		started = append(started, c)
	}
	if len(started) == 0 {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, d.cfg.DeliveryTimeout)
	defer cancel()
	stopRenew := d.renewWhileRunning(callCtx, cancel, started)
	start := time.Now()
	answers := d.deliver(callCtx, started)
	stopRenew()
	took := time.Since(start).Seconds()
	d.metrics.ConsumerBatch.WithLabelValues(string(started[0].Member.Destination)).Observe(float64(len(started)))
	for i, c := range started {
		res, err := answers[i].Unpack()
		result := callResultOK
		if err != nil {
			result = callResultError
		}
		d.metrics.DeliverySecs.WithLabelValues(string(c.Member.Destination), result).Observe(took)
		d.handOver(ctx, c, res, err)
	}
}

// deliver makes the consumer call of process and returns one answer per
// claim. Only a transport.Batcher gets several claims at once (chunks
// builds larger chunks for nothing else); a batcher that answers a
// different number of deliveries is not trusted for any of them.
func (d *Dispatcher) deliver(ctx context.Context, cs []Claimed) []transport.Answer {
	batcher, ok := d.transport.(transport.Batcher)
	if len(cs) == 1 || !ok {
		out := make([]transport.Answer, len(cs))
		for i, c := range cs {
			out[i].Result, out[i].Err = d.transport.Deliver(ctx, c.Delivery())
		}
		return out
	}
	ds := make([]transport.Delivery, len(cs))
	for i, c := range cs {
		ds[i] = c.Delivery()
	}
	answers := batcher.DeliverBatch(ctx, ds)
	if len(answers) == len(cs) {
		return answers
	}
	err := transport.Retryable(transport.CodeBatchAnswers, fmt.Errorf("%w: %d answers for %d deliveries", transport.ErrBatchAnswers, len(answers), len(cs)))
	answers = make([]transport.Answer, len(cs))
	for i := range answers {
		answers[i].Err = err
	}
	return answers
}

// handOver records a consumer call's outcome for one delivery. Outcomes are
// recorded even when ctx is being drained, and after the slot has moved on
// to its next delivery: the consumer call is what Concurrency bounds, and
// waiting for the ack batch's commit would leave the slot idle for a round
// of the acker. At most Concurrency+AckBatchSize outcomes are being
// recorded at once (a slot waits for room); every one stays under its own
// fence and lease, and the drain waits for them.
func (d *Dispatcher) handOver(ctx context.Context, c Claimed, res transport.Result, err error) {
	if d.hooks.AfterDeliver != nil && errors.Is(d.hooks.AfterDeliver(c), ErrSimulatedCrash) {
		return
	}
	d.settling <- struct{}{}
	d.settlers.Add(1)
	go func() {
		defer func() { <-d.settling; d.settlers.Done() }()
		d.settle(context.WithoutCancel(ctx), c, res, err)
	}()
}
