package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schemagen"
)

const (
	dsGolden  = "../../contracts/deliveryset/testdata/golden/first-release"
	dsNeg     = "../../contracts/deliveryset/testdata/negative"
	envGolden = "../../contracts/envelope/testdata/golden"
	envNeg    = "../../contracts/envelope/testdata/negative"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// DS-7: the CLI prints the golden first-release definition, canonical, digest included.
func TestDS7CLIFirstRelease(t *testing.T) {
	t.Parallel()
	r := runMain(t, nil, "contracts", "delivery-set", "first-release", "--projection-name", "operations_read_model", "--projection-version", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, string(read(t, filepath.Join(dsGolden, "canonical.json"))), r.stdout)

	d, err := deliveryset.Decode([]byte(r.stdout))
	require.NoError(t, err)
	require.Len(t, d.ApplicableEvents, 13)
	require.Len(t, d.Members, 14)

	r = runMain(t, []byte(r.stdout), "contracts", "digest", "--kind", deliveryset.Kind)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, string(read(t, filepath.Join(dsGolden, "digest.txt"))), r.stdout)
}

func TestDS7CLIFirstReleaseRejectsMissingOrBadFlags(t *testing.T) {
	t.Parallel()
	r := runMain(t, nil, "contracts", "delivery-set", "first-release", "--projection-name", "ops")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "--projection-version")
	r = runMain(t, nil, "contracts", "delivery-set", "first-release", "--projection-name", "Bad Name", "--projection-version", "1")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "invalid projection")
	r = runMain(t, nil, "contracts", "delivery-set", "first-release", "--projection-name", "ops", "--projection-version", "2", "--delivery-set-version", "7")
	require.Equal(t, 0, r.code, r.stderr)
	d, err := deliveryset.Decode([]byte(r.stdout))
	require.NoError(t, err)
	require.EqualValues(t, 7, d.Version)
}

// DS-1..DS-5: validate --kind DeliverySetDefinition accepts the golden and
// rejects every negative artefact with its typed reason on stderr.
func TestDS1CLIValidateDeliverySet(t *testing.T) {
	t.Parallel()
	r := runMain(t, read(t, filepath.Join(dsGolden, "raw.json")), "contracts", "validate", "--kind", deliveryset.Kind)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stdout)

	r = runMain(t, read(t, filepath.Join(dsNeg, "member-count-mismatch.json")), "contracts", "validate", "--kind", deliveryset.Kind)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, deliveryset.ErrMemberCount.Error())
	require.Contains(t, r.stderr, "$.memberCount")

	r = runMain(t, read(t, filepath.Join(dsNeg, "core-operations-without-projection.json")), "contracts", "validate", "--kind", deliveryset.Kind)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, deliveryset.ErrProjectionTargetMismatch.Error())

	entries, err := os.ReadDir(dsNeg)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "manifest.json" {
			continue
		}
		r := runMain(t, read(t, filepath.Join(dsNeg, e.Name())), "contracts", "validate", "--kind", deliveryset.Kind)
		require.Equal(t, 1, r.code, e.Name())
		require.True(t, strings.HasPrefix(r.stderr, "oceanway: invalid DeliverySetDefinition: "), r.stderr)
	}
}

// CT-2, DS-7: validate --kind CanonicalEventEnvelope@1 validates the envelope
// and the payload of its exact pair.
func TestCT2CLIValidateEnvelope(t *testing.T) {
	t.Parallel()
	for _, p := range envelope.Pairs() {
		r := runMain(t, read(t, filepath.Join(envGolden, p.EventType, "raw.json")), "contracts", "validate", "--kind", envelope.Kind)
		require.Equal(t, 0, r.code, "%s: %s", p.EventType, r.stderr)
		r = runMain(t, read(t, filepath.Join(envGolden, p.EventType, "raw.json")), "contracts", "digest", "--kind", envelope.Kind)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, string(read(t, filepath.Join(envGolden, p.EventType, "digest.txt"))), r.stdout)
	}
	r := runMain(t, read(t, filepath.Join(envNeg, "alias-event-type.json")), "contracts", "validate", "--kind", envelope.Kind)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, envelope.ErrUnknownEventPair.Error())
	r = runMain(t, read(t, filepath.Join(envNeg, "missing-payload-field.json")), "contracts", "validate", "--kind", envelope.Kind)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "$.payload.billingReservationId")
}

// CT-5: contracts schema --out writes exactly the committed generated files.
func TestCT5CLISchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runMain(t, nil, "contracts", "schema", "--out", dir)
	require.Equal(t, 0, r.code, r.stderr)
	files, err := schemagen.Files()
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), len(files))
	for rel := range files {
		got := read(t, filepath.Join(dir, filepath.FromSlash(rel)))
		want := read(t, filepath.Join("../../contracts/schema", filepath.FromSlash(rel)))
		require.Equal(t, string(want), string(got), rel)
	}
	r = runMain(t, nil, "contracts", "schema")
	require.Equal(t, 1, r.code)
}
