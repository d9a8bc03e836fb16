package cli

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 35 item 4: without GOGC in the environment serve, demo and bench
// run at the measured GC target; GOGC, when set, is left to the runtime.
func TestRuntimeDefaultsGCTarget(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "150")
	require.Equal(t, "GOGC=150 (environment)", applyRuntimeDefaults())
	require.Equal(t, 100, debug.SetGCPercent(100), "an environment GOGC is the runtime's, not changed")

	require.NoError(t, os.Unsetenv("GOGC"))
	require.Contains(t, applyRuntimeDefaults(), "GOGC=400 (default")
	require.Equal(t, defaultGCPercent, debug.SetGCPercent(100))
}
