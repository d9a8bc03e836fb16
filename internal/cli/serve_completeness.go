package cli

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/server"
)

// defaultCompletenessInterval is how often `serve` records the Operations
// completeness proof (OPS-4) when it runs the Operations projector.
const defaultCompletenessInterval = 30 * time.Second

// startCompletenessProofs records the Operations completeness proof of the
// active projection version on the interval, in one consistent snapshot
// each, content-addressed (readmodel.RecordCompleteness: an unchanged
// snapshot writes nothing). It runs as the Operations role's pool. The
// returned func waits for the job to stop after ctx ends. interval ≤ 0
// disables it.
func startCompletenessProofs(ctx context.Context, pool *pgxpool.Pool, interval time.Duration, log *slog.Logger) (wait func()) {
	if interval <= 0 {
		return func() {}
	}
	rm := readmodel.New(pool)
	var wg sync.WaitGroup
	wg.Go(func() {
		server.Periodic{
			Name: "operations completeness proof", Interval: interval, Log: log,
			RunFunc: func(ctx context.Context) error {
				proof, recorded, err := rm.RecordCompleteness(ctx, readmodel.Params{})
				if err == nil && recorded {
					log.Info("completeness proof recorded", "snapshot", proof.SnapshotID,
						"projection", proof.Projection.Name, "version", proof.Projection.Version,
						"completeness", proof.ProjectionCompleteness, "reasons", proof.Reasons)
				}
				return err
			},
		}.Run(ctx)
	})
	return wg.Wait
}
