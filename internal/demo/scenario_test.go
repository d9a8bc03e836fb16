package demo

import (
	"math/big"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/gateway/simprovider"
)

// issue 31 item 8: no run of the scenario can settle above its reservation
// (a target_above_reservation case has no owner-side fix, so the demo could
// never close it): three attempts at the most any one attempt is reported
// at, its fix included, stay within ReservationFloor.
func TestScenarioReservationCoversTheWorstCase(t *testing.T) {
	t.Parallel()
	worst := new(big.Rat)
	for _, sc := range simprovider.Scenarios {
		p := simprovider.New(simprovider.Config{Seed: 1, Force: sc})
		for range 3000 {
			id := uuid.NewString()
			obs, err := p.Execute(t.Context(), &contract.AttemptRouteBinding{SlotKey: contract.SlotKey{ExecutionAttemptID: id}})
			require.NoError(t, err)
			// The most each usage dimension is reported at, before
			// finality (post-finality corrections are transitions).
			most := map[string]*big.Rat{}
			for _, o := range append(obs, p.Reconciled(id)...) {
				if o.EvidenceKind != contract.EvidenceProviderUsage || o.Quantity == "" {
					continue
				}
				price, err := settlement.PriceOf(o.DimensionKey)
				require.NoError(t, err)
				amount, err := settlement.Multiply(o.Quantity, price.UnitPrice)
				require.NoError(t, err)
				a, ok := new(big.Rat).SetString(amount)
				require.True(t, ok, amount)
				if m, seen := most[o.DimensionKey]; !seen || a.Cmp(m) > 0 {
					most[o.DimensionKey] = a
				}
			}
			target := new(big.Rat)
			for _, a := range most {
				target.Add(target, a)
			}
			if target.Cmp(worst) > 0 {
				worst = target
			}
		}
	}
	require.Positive(t, worst.Sign())
	three := new(big.Rat).Mul(worst, big.NewRat(3, 1))
	require.LessOrEqual(t, three.Cmp(big.NewRat(ReservationFloor, 1)), 0,
		"three attempts of %s credits each exceed the reservation floor %d", worst.FloatString(3), ReservationFloor)
}
