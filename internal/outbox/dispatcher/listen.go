package dispatcher

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/route"
)

// listen wakes the loop on NOTIFY from append transactions. On connection
// loss it retries after PollInterval; polling keeps working meanwhile.
func (d *Dispatcher) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := d.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("listen connection lost; polling until it is back", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.cfg.PollInterval):
		}
	}
}

// listenOnce holds a dedicated connection (not one of the pool's, which
// deliveries and acks need) for LISTEN until it fails or ctx ends.
func (d *Dispatcher) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.StatementTimeout)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return err
	}
	if d.hooks.Listening != nil {
		d.hooks.Listening()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if d.wants(route.Destination(n.Payload)) {
			d.Wake()
		}
	}
}

func (d *Dispatcher) wants(dest route.Destination) bool {
	if len(d.cfg.Destinations) == 0 {
		return true
	}
	for _, x := range d.cfg.Destinations {
		if x == dest {
			return true
		}
	}
	return false
}
