package measure

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// CPUSampler measures the CPU of a window the caller opens and closes
// itself (the loop benchmark, whose window is not one Drive): this process,
// the PostgreSQL backends of databases (sampled as in Drive) and the
// machine.
type CPUSampler struct{ s *cpuSampler }

// StartCPU opens the window: every backend of databases alive now is a
// baseline, and sampling goes on in the background until Stop. admin is a
// session on the server's maintenance database, used by nothing else
// until Stop returns.
func StartCPU(ctx context.Context, admin *pgx.Conn, databases []string) *CPUSampler {
	s := newCPUSampler(admin, databases, nil)
	s.Start(ctx)
	return &CPUSampler{s: s}
}

// Stop closes the window; the per-1k figures are per 1,000 units (seconds
// per 1,000 units is milliseconds per unit).
func (c *CPUSampler) Stop(ctx context.Context, units int) CPU { return c.s.Stop(ctx, units) }
