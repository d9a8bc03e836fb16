package cli

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// OB-CLAIM-5: the claim cooldown comes from configuration (flag, then
// OCEANWAY_CLAIM_COOLDOWN, then serve's documented default, 100 ms, above
// the dispatcher's own 40 ms; issue 35).
func TestDispatcherFlags_OBCLAIM5_ClaimCooldownFromConfiguration(t *testing.T) {
	parse := func(t *testing.T, args ...string) dispatcher.Config {
		t.Helper()
		var f dispatcherFlags
		cmd := &cobra.Command{Use: "x"}
		f.register(cmd)
		require.NoError(t, cmd.ParseFlags(args))
		return f.cfg
	}
	t.Run("default", func(t *testing.T) {
		t.Setenv("OCEANWAY_CLAIM_COOLDOWN", "")
		require.Equal(t, 100*time.Millisecond, parse(t).ClaimCooldown)
		require.Equal(t, 40*time.Millisecond, dispatcher.Config{}.WithDefaults().ClaimCooldown, "the dispatcher's own default stays")
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv("OCEANWAY_CLAIM_COOLDOWN", "15ms")
		require.Equal(t, 15*time.Millisecond, parse(t).ClaimCooldown)
	})
	t.Run("flag over env", func(t *testing.T) {
		t.Setenv("OCEANWAY_CLAIM_COOLDOWN", "15ms")
		require.Equal(t, -time.Millisecond, parse(t, "--claim-cooldown", "-1ms").ClaimCooldown)
	})
}
