package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress renders the live view: a progress bar of acknowledged deliveries
// on a terminal, plain periodic lines otherwise.
type progress struct {
	core  queryer
	cfg   Config
	start time.Time
	bar   *progressbar.ProgressBar
	last  counts
}

type counts struct{ appended, acknowledged, open, quarantined int64 }

func newProgress(core queryer, cfg Config, start time.Time) *progress {
	p := &progress{core: core, cfg: cfg, start: start}
	if cfg.Bar {
		p.bar = progressbar.NewOptions64(int64(2*cfg.Runs),
			progressbar.OptionSetWriter(cfg.Progress),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("acks"),
			progressbar.OptionShowIts(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetDescription("acknowledged"),
		)
	}
	return p
}

func (p *progress) read(ctx context.Context) (counts, error) {
	var c counts
	err := p.core.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM outbox.outbox_events),
		       count(*) FILTER (WHERE status = 'acknowledged'),
		       count(*) FILTER (WHERE status IN ('pending', 'leased')),
		       count(*) FILTER (WHERE status = 'quarantined')
		FROM outbox.outbox_deliveries`).Scan(&c.appended, &c.acknowledged, &c.open, &c.quarantined)
	return c, err
}

func (p *progress) loop(ctx context.Context) {
	t := time.NewTicker(p.cfg.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.show(ctx)
		}
	}
}

func (p *progress) show(ctx context.Context) {
	c, err := p.read(ctx)
	if err != nil {
		return
	}
	p.last = c
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("appended %d · open %d · quarantined %d · acknowledged", c.appended, c.open, c.quarantined))
		_ = p.bar.Set64(c.acknowledged)
		return
	}
	fmt.Fprintf(p.cfg.Progress, "demo: t=%5.1fs appended=%d acknowledged=%d pending=%d quarantined=%d\n",
		time.Since(p.start).Seconds(), c.appended, c.acknowledged, c.open, c.quarantined)
}

func (p *progress) final() {
	p.show(context.Background())
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.cfg.Progress)
	}
}
