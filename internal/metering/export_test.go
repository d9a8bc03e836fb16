package metering

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SettlementEvent exposes the settlement input event builder to the
// external tests that commit a hand-built version as the metering role.
var SettlementEvent = settlementEvent

// WorkClaimLaneSQL is the lane claim statement (plan tests).
var WorkClaimLaneSQL = laneStore(nil).ClaimSQL()

// LockFence is the input fence lock every metering transaction takes first.
func LockFence(ctx context.Context, tx pgx.Tx, attemptID string) error {
	_, err := lockFence(ctx, tx, attemptID)
	return err
}
