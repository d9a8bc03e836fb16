package reconciliation_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
)

// payloadAccepted: the payload passes its pair's strict payload description.
func payloadAccepted(t *testing.T, eventType string, payload map[string]any) {
	t.Helper()
	pair, err := envelope.Pair(eventType, "1")
	require.NoError(t, err)
	body, err := jcs.Marshal(payload)
	require.NoError(t, err)
	_, err = schema.DecodeDocument(body, schema.Ref{Def: pair.Payload})
	require.NoError(t, err, eventType)
}

// BI-2, CT-2: the result and the applied fact carry everything their
// events' fixed payloads point at; the payloads they build pass the pairs'
// strict descriptions and repeat the objects' own values.
func TestLatePayloadsMatchTheirPairs_BI2(t *testing.T) {
	t.Parallel()
	for _, v := range []lateVariant{lateFirst, lateSecond} {
		c := buildLateChain(t, v, nil)
		res := c.result.CommittedPayload()
		payloadAccepted(t, envelope.BillingLateCommandResultCommittedV1, res.Map())
		require.Equal(t, c.result.Result.Digest, res.LateSettlementCommandResultDigest)
		require.Equal(t, c.dec.CommandOperationID(), res.LateSettlementCommandOperationID)
		require.Equal(t, c.funding.FundingAmount, res.AdjustmentAmount)
		require.Equal(t, res.FromSettlementStateRevision+1, res.ToSettlementStateRevision)
		require.Equal(t, c.claims.Subject, res.ActorWorkforcePrincipalID)
		require.Equal(t, c.exposure.ExposureID(), res.LateSettlementExposureID)

		applied := c.applied.AppliedPayload()
		payloadAccepted(t, envelope.BillingCaseResolutionAppliedV1, applied.Map())
		require.Equal(t, c.applied.Applied.Digest, applied.BillingCaseResolutionAppliedDigest)
		require.Equal(t, "late_settlement_command", applied.ResolutionSource)
		require.Equal(t, c.identity.Reservation.Digest, applied.LateSettlementCaseIdentityReservationDigest)

		_, moot := mootingTransition(t, c)
		p := moot.AppliedPayload()
		payloadAccepted(t, envelope.BillingCaseResolutionAppliedV1, p.Map())
		require.Equal(t, "settlement_transition", p.ResolutionSource)
	}
}
