// Package legacy adopts a legacy outbox table into the core outbox
// (OB-BOOT-1): `oceanway migrate --adopt-legacy --evidence FILE`.
//
// Each legacy row (legacy_outbox: id, envelope text, published_at) is
// classified with the contracts implementation: an envelope that is not
// JSON or does not decode strictly is unparseable_envelope, an unknown
// (eventType, eventSchemaVersion) is unsupported_schema, an event id already
// stored with another jcs-sha256-v1 digest is digest_conflict; those rows go
// to outbox.legacy_quarantine keyed by the legacy row. Every other row is
// adopted: a published one under the Bootstrap Delivery Set Version through
// outbox.adopt_legacy_published (no delivery row), an open one through the
// ordinary append path under the active definition (pending delivery rows).
// Rows already adopted or quarantined are compared, never written again, so
// a second run changes nothing.
package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// DefaultSource is the legacy table the example (docs/examples/legacy-outbox.sql) creates.
const DefaultSource = "public.legacy_outbox"

// Reason classes of outbox.legacy_quarantine.
const (
	ClassUnparseable    = "unparseable_envelope"
	ClassUnsupported    = "unsupported_schema"
	ClassDigestConflict = "digest_conflict"
)

// ErrNoActiveDefinition: open legacy events are appended under the active
// definition, so adoption needs one (`oceanway definitions activate`).
var ErrNoActiveDefinition = errors.New("legacy: no active delivery set definition (register and activate one first)")

// Params configures one adoption run.
type Params struct {
	Source string // legacy table, schema-qualified (default DefaultSource)
	Now    func() time.Time
}

// Evidence is the adoption's migration evidence (the JSON of --evidence).
type Evidence struct {
	Source          string                `json:"legacySource"`
	RanAt           time.Time             `json:"ranAt"`
	Scope           Scope                 `json:"scope"`
	Counts          map[string]int        `json:"counts"`
	Bootstrap       Quadruple             `json:"bootstrapDefinition"`
	OpenDefinition  Quadruple             `json:"openEventsDefinition"`
	SetDigest       string                `json:"adoptedSetDigest"`
	GoldenRun       envelope.GoldenResult `json:"goldenRun"`
	AdoptedTotal    int                   `json:"adoptedTotal"`
	QuarantineTotal int                   `json:"quarantinedTotal"`
}

// Quadruple is a definition quadruple as the evidence spells it.
type Quadruple struct {
	DeliverySetVersion                          int64  `json:"deliverySetVersion"`
	DeliverySetDefinitionSchemaVersion          string `json:"deliverySetDefinitionSchemaVersion"`
	DeliverySetDefinitionDigestAlgorithmVersion string `json:"deliverySetDefinitionDigestAlgorithmVersion"`
	DeliverySetDefinitionDigest                 string `json:"deliverySetDefinitionDigest"`
}

func quadrupleOf(d *deliveryset.Definition) Quadruple {
	q := d.Quadruple()
	return Quadruple{q.DeliverySetVersion, q.DeliverySetDefinitionSchemaVersion,
		string(q.DeliverySetDefinitionDigestAlgorithmVersion), q.DeliverySetDefinitionDigest}
}

// Scope is what the run looked at.
type Scope struct {
	LegacyRows int   `json:"legacyRows"`
	FirstRowID int64 `json:"firstRowId"`
	LastRowID  int64 `json:"lastRowId"`
}

type legacyRow struct {
	ID          int64
	Envelope    string
	PublishedAt *time.Time
}

// Adopt runs one adoption in a single transaction and returns its evidence.
func Adopt(ctx context.Context, pool db.Beginner, p Params) (*Evidence, error) {
	if p.Source == "" {
		p.Source = DefaultSource
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	golden := envelope.RunGoldens()
	if len(golden.Failures) > 0 {
		return nil, fmt.Errorf("legacy: contracts golden run failed: %v", golden.Failures)
	}
	ev := &Evidence{Source: p.Source, RanAt: p.Now().UTC(), GoldenRun: golden, Counts: map[string]int{
		"adopted_published": 0, "adopted_open": 0, "already_adopted": 0, "already_quarantined": 0,
		ClassUnparseable: 0, ClassUnsupported: 0, ClassDigestConflict: 0, "changed_since_adoption": 0,
	}}
	err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		active, err := outbox.ActiveDefinition(ctx, tx)
		if err != nil {
			if errors.Is(err, outbox.ErrNoActiveDefinition) || errors.Is(err, outbox.ErrDefinitionNotFound) {
				return ErrNoActiveDefinition
			}
			return fmt.Errorf("read active definition: %w", err)
		}
		boot, err := bootstrapTx(ctx, tx, p.Source, active.Definition)
		if err != nil {
			return err
		}
		ev.Bootstrap, ev.OpenDefinition = quadrupleOf(boot), quadrupleOf(active.Definition)
		rows, err := readLegacy(ctx, tx, p.Source)
		if err != nil {
			return err
		}
		ev.Scope.LegacyRows = len(rows)
		if len(rows) > 0 {
			ev.Scope.FirstRowID, ev.Scope.LastRowID = rows[0].ID, rows[len(rows)-1].ID
		}
		for _, r := range rows {
			class, err := adoptRow(ctx, tx, p.Source, boot, active.Definition, r)
			if err != nil {
				return fmt.Errorf("adopt legacy row %d: %w", r.ID, err)
			}
			ev.Counts[class]++
		}
		ev.SetDigest, ev.AdoptedTotal, ev.QuarantineTotal, err = setDigest(ctx, tx, p.Source)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// bootstrapTx returns the source's Bootstrap Delivery Set Version,
// registering it on the first run: the first release's pairs and members
// (projection target of the active definition), every member
// mandatory=false, under the next free version.
func bootstrapTx(ctx context.Context, tx pgx.Tx, source string, active *deliveryset.Definition) (*deliveryset.Definition, error) {
	var version int64
	err := tx.QueryRow(ctx, `SELECT delivery_set_version FROM outbox.bootstrap_definitions WHERE legacy_source = $1`, source).Scan(&version)
	switch {
	case err == nil:
		stored, err := outbox.DefinitionByVersion(ctx, tx, version)
		if err != nil {
			return nil, fmt.Errorf("read bootstrap definition: %w", err)
		}
		return stored.Definition, nil
	case !errors.Is(db.NotFound(err), db.ErrNotFound):
		return nil, fmt.Errorf("read bootstrap definition: %w", err)
	}
	projName, projVersion := "", int64(0)
	for _, m := range active.Members {
		if m.ProjectionTarget.Required {
			projName, projVersion = m.ProjectionTarget.Name, m.ProjectionTarget.Version
			break
		}
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(delivery_set_version), 0) + 1 FROM outbox.delivery_set_versions`).Scan(&version); err != nil {
		return nil, fmt.Errorf("next definition version: %w", err)
	}
	def, err := deliveryset.Build(version, projName, projVersion)
	if err != nil {
		return nil, fmt.Errorf("build bootstrap definition: %w", err)
	}
	for i := range def.Members {
		def.Members[i].Mandatory = false
	}
	if err := def.Seal(); err != nil {
		return nil, fmt.Errorf("seal bootstrap definition: %w", err)
	}
	if _, err := outbox.BindDestinationsTx(ctx, tx, release.Bindings()...); err != nil {
		return nil, err
	}
	if _, err := outbox.RegisterTx(ctx, tx, def, outbox.RegisterOpts{SourceRelease: "legacy-bootstrap:" + source}); err != nil {
		return nil, fmt.Errorf("register bootstrap definition: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox.bootstrap_definitions (delivery_set_version, legacy_source) VALUES ($1, $2)`, version, source); err != nil {
		return nil, fmt.Errorf("record bootstrap definition: %w", err)
	}
	return def, nil
}

func readLegacy(ctx context.Context, tx pgx.Tx, source string) ([]legacyRow, error) {
	ident := pgx.Identifier{source}
	if s, t, ok := cutDot(source); ok {
		ident = pgx.Identifier{s, t}
	}
	rows, err := tx.Query(ctx, `SELECT id, envelope, published_at FROM `+ident.Sanitize()+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read legacy table %s: %w", source, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (legacyRow, error) {
		var l legacyRow
		err := r.Scan(&l.ID, &l.Envelope, &l.PublishedAt)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("read legacy table %s: %w", source, err)
	}
	return out, nil
}

func cutDot(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// classify decodes a legacy envelope with the contracts: the decoded
// envelope and its digest, or a quarantine class and reason.
func classify(doc string) (*envelope.Envelope, digest.Digest, string, string) {
	var head struct {
		EventType          string `json:"eventType"`
		EventSchemaVersion string `json:"eventSchemaVersion"`
	}
	if err := json.Unmarshal([]byte(doc), &head); err != nil {
		return nil, digest.Digest{}, ClassUnparseable, "envelope is not a JSON object: " + err.Error()
	}
	if _, err := envelope.Pair(head.EventType, head.EventSchemaVersion); err != nil {
		return nil, digest.Digest{}, ClassUnsupported, fmt.Sprintf("unsupported event pair %q schema %q: %v", head.EventType, head.EventSchemaVersion, err)
	}
	e, err := envelope.DecodeEnvelope([]byte(doc))
	if err != nil {
		return nil, digest.Digest{}, ClassUnparseable, "envelope does not decode strictly: " + err.Error()
	}
	d, err := e.Digest()
	if err != nil {
		return nil, digest.Digest{}, ClassUnparseable, "envelope digest: " + err.Error()
	}
	return e, d, "", ""
}

func adoptRow(ctx context.Context, tx pgx.Tx, source string, boot, active *deliveryset.Definition, r legacyRow) (string, error) {
	e, d, class, reason := classify(r.Envelope)
	var adoptedSHA string
	err := tx.QueryRow(ctx, `SELECT event_envelope_sha256 FROM outbox.legacy_adoptions WHERE legacy_source = $1 AND legacy_row_id = $2`, source, r.ID).Scan(&adoptedSHA)
	switch {
	case err == nil:
		if class == "" && adoptedSHA == d.Value {
			return "already_adopted", nil
		}
		return "changed_since_adoption", nil
	case !errors.Is(db.NotFound(err), db.ErrNotFound):
		return "", err
	}
	var quarantined bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox.legacy_quarantine WHERE legacy_source = $1 AND legacy_row_id = $2)`, source, r.ID).Scan(&quarantined); err != nil {
		return "", err
	}
	if quarantined {
		return "already_quarantined", nil
	}
	var stored *string
	if class == "" {
		var sha string
		err := tx.QueryRow(ctx, `SELECT event_envelope_sha256 FROM outbox.outbox_events WHERE event_id = $1`, e.EventID).Scan(&sha)
		switch {
		case err == nil:
			stored = &sha
			if sha != d.Value {
				class, reason = ClassDigestConflict, fmt.Sprintf("event %s is already stored with digest %s; this legacy row digests to %s", e.EventID, sha, d.Value)
			}
		case !errors.Is(db.NotFound(err), db.ErrNotFound):
			return "", err
		}
	}
	if class != "" {
		var alg, sha *string
		if e != nil {
			a := string(d.Algorithm)
			alg, sha = &a, &d.Value
		}
		var legacyID *string
		var head struct {
			EventID string `json:"eventId"`
		}
		if json.Unmarshal([]byte(r.Envelope), &head) == nil && head.EventID != "" {
			legacyID = &head.EventID
		}
		_, err := tx.Exec(ctx, `INSERT INTO outbox.legacy_quarantine (legacy_source, legacy_row_id, legacy_event_id, reason_class,
			reason, event_envelope_digest_algorithm_version, event_envelope_sha256, conflicting_sha256, legacy_envelope, legacy_published_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			source, r.ID, legacyID, class, reason, alg, sha, stored, r.Envelope, r.PublishedAt)
		if err != nil {
			return "", fmt.Errorf("quarantine: %w", err)
		}
		return class, nil
	}
	if stored != nil {
		// the same event (same digest) appended or adopted already: record
		// nothing new for it, the row is a duplicate of a stored event.
		return "already_adopted", nil
	}
	if r.PublishedAt != nil {
		canonical, err := e.Canonical()
		if err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, `SELECT outbox.adopt_legacy_published($1, $2, $3, $4, $5, $6)`,
			source, r.ID, string(canonical), d.Value, *r.PublishedAt, boot.Version); err != nil {
			return "", fmt.Errorf("adopt published event: %w", err)
		}
		return "adopted_published", nil
	}
	if _, err := release.AppendTx(ctx, tx, *e); err != nil {
		return "", fmt.Errorf("append open event: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox.legacy_adoptions (legacy_source, legacy_row_id, event_id, class,
		event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version)
		VALUES ($1, $2, $3, 'open', $4, $5, $6)`, source, r.ID, e.EventID, string(d.Algorithm), d.Value, active.Version); err != nil {
		return "", fmt.Errorf("record open adoption: %w", err)
	}
	return "adopted_open", nil
}

// setDigest is the jcs-sha256-v1 digest of the adopted set (sorted by legacy
// row: row id, event id, envelope digest, class) and the two totals.
func setDigest(ctx context.Context, tx pgx.Tx, source string) (string, int, int, error) {
	rows, err := tx.Query(ctx, `SELECT legacy_row_id, event_id::text, event_envelope_sha256, class
		FROM outbox.legacy_adoptions WHERE legacy_source = $1 ORDER BY legacy_row_id`, source)
	if err != nil {
		return "", 0, 0, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (any, error) {
		var id int64
		var eventID, sha, class string
		if err := r.Scan(&id, &eventID, &sha, &class); err != nil {
			return nil, err
		}
		return map[string]any{"legacyRowId": id, "eventId": eventID, "eventEnvelopeSha256": sha, "class": class}, nil
	})
	if err != nil {
		return "", 0, 0, err
	}
	d, err := digest.Of(digest.JCSSHA256V1, map[string]any{"legacySource": source, "adopted": items})
	if err != nil {
		return "", 0, 0, err
	}
	var q int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM outbox.legacy_quarantine WHERE legacy_source = $1`, source).Scan(&q); err != nil {
		return "", 0, 0, err
	}
	return d.Value, len(items), q, nil
}
