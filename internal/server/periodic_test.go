package server_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/server"
)

// A periodic job runs at once, keeps running after a failure, and stops
// when its context ends.
func TestPeriodicRunsUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	results := make(chan error, 16)
	var mu sync.Mutex
	runs := 0
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		server.Periodic{
			Name: "test", Interval: time.Millisecond,
			RunFunc: func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				runs++
				if runs == 1 {
					return errors.New("first run fails")
				}
				return nil
			},
			DoneFunc: func(err error) {
				select {
				case results <- err:
				default:
				}
			},
		}.Run(ctx)
	}()
	require.Error(t, <-results)
	require.NoError(t, <-results)
	cancel()
	<-stopped
}
