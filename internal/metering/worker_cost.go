package metering

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// processCostWork is the provider-cost lane of the worker: ProcessCostWork
// (cost.go) with the processor's owner reads, which must also serve the cost
// bootstrap read (CostReads; Owners does). Mappings are
// DefaultCostMappings; a blocked Work is claimable again after
// costBlockedRetry (a fix is an operator's, not the next millisecond's).
func (p *Processor) processCostWork(ctx context.Context, a *Attempt) (Outcome, error) {
	reads, ok := p.reads.(CostReads)
	if !ok {
		return Outcome{}, fmt.Errorf("%w: %s (the owner reads have no cost source read)", ErrLaneNotBuilt, a.Head.Lane.Kind)
	}
	res, err := ProcessCostWork(ctx, p.pool, CostConfig{Reads: reads, BlockedRetry: costBlockedRetry}, a)
	switch {
	case errors.Is(err, ErrCostSourceUnavailable):
		return Outcome{}, fmt.Errorf("%w: %w", ErrRetryable, err)
	case err != nil:
		return Outcome{}, err
	}
	return Outcome{Finished: res.Finished, Blocked: res.Blocked}, nil
}

// costBlockedRetry is how long a blocked provider cost Work waits before a
// new attempt may claim it.
const costBlockedRetry = 30 * time.Second
