package envelope_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

// CT-5: the generated payload struct of every pair reads the golden payload
// and writes it back to the same canonical bytes.
func TestCT5TypedPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range envelope.Pairs() {
		t.Run(p.EventType, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("testdata", "golden", p.EventType, "raw.json"))
			require.NoError(t, err)
			e, err := envelope.DecodeEnvelope(raw)
			require.NoError(t, err)
			typed, err := envelope.TypedPayload(e)
			require.NoError(t, err)
			want, err := jcs.Marshal(e.Payload)
			require.NoError(t, err)
			got, err := jcs.Marshal(typed.Map())
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

func TestPayloadOfIsStrict(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", envelope.RunCreatedV2, "raw.json"))
	require.NoError(t, err)
	e, err := envelope.DecodeEnvelope(raw)
	require.NoError(t, err)

	run, err := envelope.PayloadOf[envelope.RunCreatedV2_0Payload](e)
	require.NoError(t, err)
	require.Equal(t, e.Payload["runId"], run.RunID)
	require.Equal(t, e.Payload["runAdmissionManifestRef"], run.RunAdmissionManifest().Ref)

	_, err = envelope.PayloadOf[envelope.WalletReservedV2_0Payload](e)
	require.ErrorIs(t, err, envelope.ErrUnknownEventPair, "another pair's struct")

	extra := *e
	extra.Payload = run.Map()
	extra.Payload["surprise"] = "x"
	_, err = envelope.PayloadOf[envelope.RunCreatedV2_0Payload](&extra)
	require.ErrorIs(t, err, strict.ErrUnknownField)
}
