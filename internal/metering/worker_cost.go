package metering

import (
	"context"
	"fmt"
)

// processCostWork is the provider-cost lane's processing, built on
// its own branch (meter-cost): until then the worker does not claim this
// lane (Worker lanes default to the eligibility lane only).
func (p *Processor) processCostWork(_ context.Context, a *Attempt) (Outcome, error) {
	return Outcome{}, fmt.Errorf("%w: %s", ErrLaneNotBuilt, a.Head.Lane.Kind)
}
