package dispatcher_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// OB-CLAIM-2: a call starts with more than 1.5 renewal intervals of its
// lease left and renews every RenewInterval, so a renewal interval above two
// fifths of the lease is refused as a configuration that cannot keep its
// leases.
func TestConfig_OBCLAIM2_RenewIntervalAtMostTwoFifthsOfTheLease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		renew time.Duration
		ok    bool
	}{
		{0, true}, // the default, lease/3
		{-1, true},
		{10 * time.Second, true},
		{12 * time.Second, true},
		{12*time.Second + time.Millisecond, false},
		{15 * time.Second, false},
		{30 * time.Second, false},
	} {
		cfg := dispatcher.Config{LeaseDuration: 30 * time.Second, RenewInterval: tc.renew}.WithDefaults()
		err := cfg.Validate()
		if tc.ok {
			require.NoError(t, err, "renew %s", tc.renew)
		} else {
			require.ErrorIs(t, err, dispatcher.ErrInvalidConfig, "renew %s", tc.renew)
		}
	}
}
