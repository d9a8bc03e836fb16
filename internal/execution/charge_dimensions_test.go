package execution_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/execution"
)

// Issue 32 part 4 (ME-1, EX011): an attempt freezes the expected charge
// dimension set of its output contract (the Contracts registry's, under its
// version) in its AttemptExecutionManifest@1 and in its own row; an output
// contract the registry does not know is refused with nothing written; the
// database refuses a row whose manifest freezes no set, an empty or an
// unsorted one, or columns that differ from the manifest (EX011), and the
// frozen set never changes (EX001).
func TestEX011AttemptFreezesRegisteredChargeDimensions_ME1(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)

	req := attemptReq(st.RunID, uuid.NewString())
	a, err := e.svc.CreateAttempt(ctx, req)
	require.NoError(t, err)
	want, err := settlement.RegisteredDimensions(outputContract.Ref)
	require.NoError(t, err)
	require.Equal(t, settlement.ChargeDimensionRegistryVersion, a.Manifest.ChargeDimensionRegistryVersion)
	require.Equal(t, want, a.Manifest.ChargeDimensionKeys)
	var version string
	var keys []string
	require.NoError(t, e.exec.QueryRow(ctx, `SELECT charge_dimension_registry_version, charge_dimension_keys
		FROM execution.attempts WHERE execution_attempt_id = $1`, req.ExecutionAttemptID).Scan(&version, &keys))
	require.Equal(t, settlement.ChargeDimensionRegistryVersion, version)
	require.Equal(t, want, keys)
	replay, err := e.svc.CreateAttempt(ctx, req)
	require.NoError(t, err)
	require.True(t, replay.Replayed)
	require.Equal(t, a.Body, replay.Body)

	// An output contract the registry does not know: refused, nothing written.
	unknown := attemptReq(st.RunID, uuid.NewString())
	unknown.OutputContract.Ref = "output-contract/unregistered@1"
	_, err = e.svc.CreateAttempt(ctx, unknown)
	require.ErrorIs(t, err, execution.ErrInvalidAttempt)
	require.ErrorIs(t, err, settlement.ErrUnregisteredOutputContract)
	var n int
	require.NoError(t, e.exec.QueryRow(ctx, `SELECT count(*) FROM execution.attempts WHERE execution_attempt_id = $1`, unknown.ExecutionAttemptID).Scan(&n))
	require.Zero(t, n)

	// The database refuses a row that freezes no sorted, non-empty set
	// (guard EX011.attempt-dimensions-frozen), as the execution role meets it.
	insert := func(body string, cols string, vals string) error {
		_, err := e.exec.Exec(ctx, fmt.Sprintf(`INSERT INTO execution.attempts (execution_attempt_id, run_id, run_step_id,
			attempt_execution_manifest_ref, attempt_execution_manifest_schema_version, attempt_execution_manifest_digest_algorithm_version,
			attempt_execution_manifest_digest, manifest_body, model_deployment_id, gateway_deployment_id, routing_policy_revision, created_at%s)
			VALUES ($1, $2, $3, $4, '1', 'jcs-sha256-v1', repeat('a', 64), $5, 'm', 'g', 1, now()%s)`, cols, vals),
			uuid.NewString(), st.RunID, uuid.NewString(), "aem-"+uuid.NewString(), body)
		return err
	}
	const v = `"chargeDimensionRegistryVersion":"oceanway-charge-dimension-registry@1"`
	for name, body := range map[string]string{
		"no set":      `{` + v + `}`,
		"empty set":   `{` + v + `,"chargeDimensionKeys":[]}`,
		"unsorted":    `{` + v + `,"chargeDimensionKeys":["text.output_tokens","text.input_tokens"]}`,
		"duplicate":   `{` + v + `,"chargeDimensionKeys":["text.input_tokens","text.input_tokens"]}`,
		"no version":  `{"chargeDimensionKeys":["text.input_tokens"]}`,
		"not a array": `{` + v + `,"chargeDimensionKeys":"text.input_tokens"}`,
	} {
		require.ErrorContains(t, insert(body, "", ""), execution.CodeAttemptDimensions, name)
	}
	good := `{` + v + `,"chargeDimensionKeys":["text.input_tokens","text.output_tokens"]}`
	require.ErrorContains(t, insert(good, ", charge_dimension_keys", `, '{text.input_tokens}'`), execution.CodeAttemptDimensions, "columns differ from the manifest")
	require.ErrorContains(t, insert(good, ", charge_dimension_registry_version", `, 'other@1'`), execution.CodeAttemptDimensions, "version differs from the manifest")
	require.NoError(t, insert(good, "", ""), "a sorted, non-empty frozen set is accepted (the columns follow the manifest)")

	// The frozen set never changes.
	_, err = e.exec.Exec(ctx, `UPDATE execution.attempts SET charge_dimension_keys = '{text.input_tokens}' WHERE execution_attempt_id = $1`, req.ExecutionAttemptID)
	require.ErrorContains(t, err, execution.CodeImmutable)
}
