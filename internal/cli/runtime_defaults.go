package cli

import (
	"fmt"
	"os"
	"runtime/debug"
)

// defaultGCPercent is the Go GC target serve, demo and bench run with when
// GOGC is not set. Our processes keep a small live heap (tens of MB) and
// allocate per event (decoding, canonical JSON, digests): at Go's default
// of 100 the collector ran about twice as often for the same work. The
// figures are in docs/bench.md ("Runtime defaults").
const defaultGCPercent = 400

// applyRuntimeDefaults sets the GC target unless the environment chose one
// (GOGC, read by the Go runtime at start, always wins) and says what runs.
func applyRuntimeDefaults() string {
	if v, ok := os.LookupEnv("GOGC"); ok {
		return fmt.Sprintf("GOGC=%s (environment)", v)
	}
	debug.SetGCPercent(defaultGCPercent)
	return fmt.Sprintf("GOGC=%d (default; set GOGC to override)", defaultGCPercent)
}
