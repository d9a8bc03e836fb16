package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/retention"
)

// RET-1: --older-than takes a Go duration or whole days; anything else,
// zero or negative is refused before connecting.
func TestRetentionParseAge_RET1(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "720h": 720 * time.Hour, "90s": 90 * time.Second} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "x", "0d", "-1h", "1.5d", "0s"} {
		_, err := parseAge(bad)
		require.ErrorIs(t, err, retention.ErrInvalidOlderThan, bad)
	}
}
