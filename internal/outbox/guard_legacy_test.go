package outbox_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/outbox"
)

// OB-BOOT-1: outbox.adopt_legacy_published adopts only under a bootstrap
// definition (clause OW006.not-bootstrap-definition) and only a published
// legacy row (clause OW012.legacy-not-published); the three legacy tables
// are insert-only: OW003.bootstrap-no-update, OW002.bootstrap-no-delete,
// OW003.adoptions-no-update, OW002.adoptions-no-delete,
// OW003.legacy-quarantine-no-update, OW002.legacy-quarantine-no-delete.
// As the owner: adopt_legacy_published is executable by no runtime role
// (migrate --adopt-legacy runs as the owner), and no runtime role writes
// the legacy tables (42501).
func TestGuard_OBBOOT1_LegacyAdoptionClauses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	adopt := func(publishedAt string, version int) error {
		id := uuid.NewString()
		return asRoleTx(ctx, t, b, "", fmt.Sprintf(`SELECT outbox.adopt_legacy_published('legacy', 1, '%s', repeat('a', 64), %s, %d)`,
			rawEnvelope(id), publishedAt, version))
	}
	// OW006.not-bootstrap-definition: version 1 is the active definition, not a bootstrap one.
	requireRefusal(t, adopt("now()", 1), outbox.CodeDefinitionNotActive, "is not a bootstrap delivery set version")
	require.NoError(t, asRoleTx(ctx, t, b, "", `INSERT INTO outbox.bootstrap_definitions (delivery_set_version, legacy_source) VALUES (1, 'legacy')`))
	// OW012.legacy-not-published: an open legacy row is appended, not adopted as published.
	requireRefusal(t, adopt("NULL", 1), outbox.CodeNotInitialState, "is not published")

	// One row in each legacy table, then every UPDATE and DELETE is refused.
	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	require.NoError(t, asRoleTx(ctx, t, b, "",
		fmt.Sprintf(`INSERT INTO outbox.legacy_adoptions (legacy_source, legacy_row_id, event_id, class,
			event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version)
			VALUES ('legacy', 2, '%s', 'open', 'jcs-sha256-v1', '%s', 1)`, ev.EventID, ev.EnvelopeDigest.Value),
		`INSERT INTO outbox.legacy_quarantine (legacy_source, legacy_row_id, reason_class, reason, legacy_envelope)
			VALUES ('legacy', 3, 'unparseable_envelope', 'not JSON', 'x')`))
	for table, set := range map[string]string{
		"bootstrap_definitions": "legacy_source = 'other'",
		"legacy_adoptions":      "legacy_row_id = 20",
		"legacy_quarantine":     "reason = 'other'",
	} {
		requireRefusal(t, asRoleTx(ctx, t, b, "", "UPDATE outbox."+table+" SET "+set),
			outbox.CodeInsertOnly, "UPDATE of outbox."+table+" is forbidden")
		requireRefusal(t, asRoleTx(ctx, t, b, "", "DELETE FROM outbox."+table),
			outbox.CodeAppendOnly, "DELETE on outbox."+table+" is forbidden")
	}
}
