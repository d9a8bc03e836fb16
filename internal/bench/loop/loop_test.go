package loop

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// issue 35: the open-loop driver starts every run exactly once, on its own
// goroutine, and reports its lag for every run (no timing is asserted).
func TestDriveOpenLoopStartsEveryRunOnce(t *testing.T) {
	t.Parallel()
	const runs = 50
	var seen [runs]atomic.Int64
	r, err := Drive(t.Context(), Schedule{Runs: runs, Rate: 2000}, func(_ context.Context, i int) error {
		seen[i].Add(1)
		return nil
	})
	require.NoError(t, err)
	for i := range seen {
		require.EqualValues(t, 1, seen[i].Load(), "run %d", i)
	}
	require.Equal(t, runs, r.Runs)
	require.EqualValues(t, 2000, r.Rate)
	require.Equal(t, runs, r.Lag.Count, "a lag per scheduled start")
	require.Equal(t, runs, r.Scenario.Count)
	require.GreaterOrEqual(t, r.MaxInFlight, 1)
	require.Equal(t, r.LateStarts > 0, r.Behind)
}

// issue 35: at rate 0 the runs go through a fixed number of drivers, never
// more at once.
func TestDriveSaturationUsesItsDrivers(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	r, err := Drive(t.Context(), Schedule{Runs: 40, Drivers: 3}, func(context.Context, int) error {
		calls.Add(1)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 40, calls.Load())
	require.LessOrEqual(t, r.MaxInFlight, 3)
	require.Zero(t, r.Lag.Count, "no schedule at saturation")
	require.False(t, r.Behind)
}

// issue 35: a failing run stops the driver and is reported with its number.
func TestDriveStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := Drive(t.Context(), Schedule{Runs: 100, Drivers: 2}, func(_ context.Context, i int) error {
		if i == 7 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.Contains(t, err.Error(), "run 7")
	_, err = Drive(t.Context(), Schedule{Runs: 0, Drivers: 2}, func(context.Context, int) error { return nil })
	require.Error(t, err)
}

// issue 35: the cost per run is compared between the smallest and the
// largest run count of each rate; flat is within 1.3×.
func TestCompareFlatness(t *testing.T) {
	t.Parallel()
	r := Report{Cases: []Case{
		{Runs: 1000, ProcessMillisPerRun: 100, BackendMillisPerRun: 200, CommitsPerRun: 100, RowsReadPerRun: 1000},
		{Runs: 10000, ProcessMillisPerRun: 120, BackendMillisPerRun: 250, CommitsPerRun: 100, RowsReadPerRun: 1200},
		{Runs: 1000, Rate: 20, ProcessMillisPerRun: 100, BackendMillisPerRun: 200, CommitsPerRun: 100, RowsReadPerRun: 1000},
		{Runs: 10000, Rate: 20, ProcessMillisPerRun: 100, BackendMillisPerRun: 200, CommitsPerRun: 100, RowsReadPerRun: 1400},
		{Runs: 500, Rate: 40},
	}}
	r.Compare()
	require.Len(t, r.Flatness, 2, "rate 40 has one run count")
	require.True(t, r.Flatness[0].Flat)
	require.InDelta(t, 1.25, r.Flatness[0].PostgresCPU, 1e-9)
	require.False(t, r.Flatness[1].Flat, "rows read grew 1.4×")
	require.Equal(t, 1000, r.Flatness[1].FromRuns)
	require.Equal(t, 10000, r.Flatness[1].ToRuns)
}

// issue 35: the chart is well-formed SVG with a point per case and series.
func TestWriteSVGIsWellFormed(t *testing.T) {
	t.Parallel()
	r := Report{Cases: []Case{
		{Runs: 100, Rate: 5, FinalizedPerSecond: 5, FinalizeP99Millis: 900},
		{Runs: 100, Rate: 10, FinalizedPerSecond: 9.5, FinalizeP99Millis: 4000},
		{Runs: 100, Rate: 0, FinalizedPerSecond: 8.7, FinalizeP99Millis: 48500, Driver: DriverReport{StartedPerSecond: 21}},
	}}
	var buf bytes.Buffer
	require.NoError(t, r.WriteSVG(&buf))
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	circles := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
		}
	}
	require.Equal(t, 6, circles, "two series of three points")
	require.Error(t, (&Report{}).WriteSVG(io.Discard))
}
