package retention

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
)

var digestName = regexp.MustCompile(`^[0-9a-f]{64}\.json$`)

// VerifyResult is what a verified archive directory holds.
type VerifyResult struct {
	Dir       string   `json:"archiveDir"`
	Manifests []string `json:"manifests"`
	Files     int      `json:"files"`
	Counts    Counts   `json:"counts"`
}

// Verify re-reads every file of the archive directory and recomputes every
// digest: each manifest's and object's SHA-256 against its name and the
// manifest entry, the canonical (RFC 8785) form of every file, each event
// envelope's jcs-sha256-v1 digest with the contracts implementation, each
// definition's digest with the contracts, the counts, and that every event
// froze a definition the run archived. A file that no manifest lists, a
// leftover temporary file or anything else in the directory fails too.
// Errors are *VerifyError (errors.Is ErrArchiveInvalid).
func Verify(dir string) (*VerifyResult, error) {
	if dir == "" {
		return nil, ErrNoArchiveDir
	}
	top, err := os.ReadDir(dir)
	if err != nil {
		return nil, invalid(dir, "%v", err)
	}
	for _, e := range top {
		if !e.IsDir() || (e.Name() != manifestsDir && e.Name() != objectsDir) {
			return nil, invalid(filepath.Join(dir, e.Name()), "not part of an archive (only %s/ and %s/)", manifestsDir, objectsDir)
		}
	}
	manifests, err := digestFiles(dir, manifestsDir)
	if err != nil {
		return nil, err
	}
	if len(manifests) == 0 {
		return nil, invalid(filepath.Join(dir, manifestsDir), "no manifest")
	}
	objects, err := digestFiles(dir, objectsDir)
	if err != nil {
		return nil, err
	}
	res := &VerifyResult{Dir: dir}
	referenced := map[string]bool{}
	for _, sum := range manifests {
		m, counts, err := verifyManifest(dir, sum)
		if err != nil {
			return nil, err
		}
		for _, f := range m.Files {
			referenced[f.SHA256] = true
		}
		res.Manifests = append(res.Manifests, sum)
		res.Counts.add(counts)
	}
	for _, sum := range objects {
		if !referenced[sum] {
			return nil, invalid(objectPath(dir, sum), "listed by no manifest")
		}
	}
	res.Files = len(manifests) + len(objects)
	return res, nil
}

// digestFiles lists dir/sub, whose entries must all be <sha256>.json files.
func digestFiles(dir, sub string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, sub))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, invalid(filepath.Join(dir, sub), "%v", err)
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !digestName.MatchString(e.Name()) {
			return nil, invalid(filepath.Join(dir, sub, e.Name()), "not a content-addressed file (<sha256>.json)")
		}
		out = append(out, strings.TrimSuffix(e.Name(), fileSuffix))
	}
	return out, nil
}

func objectPath(dir, sum string) string { return filepath.Join(dir, objectsDir, sum+fileSuffix) }

// readAddressed reads a content-addressed file and checks its bytes against
// its digest (and size, when given) and that they are canonical.
func readAddressed(name, sum string, size int64) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, invalid(name, "%v", err)
	}
	if got := sha256Hex(b); got != sum {
		return nil, invalid(name, "sha256 %s, expected %s", got, sum)
	}
	if size >= 0 && int64(len(b)) != size {
		return nil, invalid(name, "%d bytes, manifest says %d", len(b), size)
	}
	c, err := jcs.Canonicalize(b)
	if err != nil || !bytes.Equal(c, b) {
		return nil, invalid(name, "not RFC 8785 canonical JSON")
	}
	return b, nil
}

func decodeStrict(name string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid(name, "decode: %v", err)
	}
	return nil
}

// Archived rows as verify reads them: the columns it checks (the rows carry
// every column of their table; their bytes are covered by the file digest).
type (
	segmentDoc struct {
		Kind   string         `json:"kind"`
		Events []segmentEvent `json:"events"`
	}
	segmentEvent struct {
		Event           json.RawMessage   `json:"event"`
		Deliveries      []json.RawMessage `json:"deliveries"`
		AttemptStarts   []json.RawMessage `json:"attemptStarts"`
		AttemptFinishes []json.RawMessage `json:"attemptFinishes"`
	}
	eventRow struct {
		EventID                                     string  `json:"event_id"`
		EventEnvelope                               string  `json:"event_envelope"`
		EventEnvelopeDigestAlgorithmVersion         string  `json:"event_envelope_digest_algorithm_version"`
		EventEnvelopeSHA256                         string  `json:"event_envelope_sha256"`
		DeliverySetVersion                          int64   `json:"delivery_set_version"`
		DeliverySetDefinitionSchemaVersion          string  `json:"delivery_set_definition_schema_version"`
		DeliverySetDefinitionDigestAlgorithmVersion string  `json:"delivery_set_definition_digest_algorithm_version"`
		DeliverySetDefinitionDigest                 string  `json:"delivery_set_definition_digest"`
		PublishedAt                                 *string `json:"published_at"`
	}
	deliveryRow struct {
		EventID     string `json:"event_id"`
		Destination string `json:"destination"`
		Status      string `json:"status"`
	}
	attemptRow struct {
		AttemptID string `json:"attempt_id"`
		EventID   string `json:"event_id"`
	}
	definitionDoc struct {
		Kind     string            `json:"kind"`
		Version  versionRow        `json:"version"`
		Members  []json.RawMessage `json:"members"`
		Bindings []json.RawMessage `json:"bindings"`
	}
	versionRow struct {
		DeliverySetVersion                          int64  `json:"delivery_set_version"`
		DeliverySetDefinitionSchemaVersion          string `json:"delivery_set_definition_schema_version"`
		DeliverySetDefinitionDigestAlgorithmVersion string `json:"delivery_set_definition_digest_algorithm_version"`
		DeliverySetDefinitionDigest                 string `json:"delivery_set_definition_digest"`
		DefinitionCanonicalJSON                     string `json:"definition_canonical_json"`
	}
)

func (v versionRow) quadruple() deliveryset.Quadruple {
	return deliveryset.Quadruple{
		DeliverySetVersion:                          v.DeliverySetVersion,
		DeliverySetDefinitionSchemaVersion:          v.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: digest.Algorithm(v.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 v.DeliverySetDefinitionDigest,
	}
}

func (e eventRow) quadruple() deliveryset.Quadruple {
	return deliveryset.Quadruple{
		DeliverySetVersion:                          e.DeliverySetVersion,
		DeliverySetDefinitionSchemaVersion:          e.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: digest.Algorithm(e.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 e.DeliverySetDefinitionDigest,
	}
}

func unmarshalRow(name string, raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(name, "row: %v", err)
	}
	return nil
}

// verifyManifest verifies one manifest and every file it lists.
func verifyManifest(dir, sum string) (*Manifest, Counts, error) {
	name := filepath.Join(dir, manifestsDir, sum+fileSuffix)
	b, err := readAddressed(name, sum, -1)
	if err != nil {
		return nil, Counts{}, err
	}
	var m Manifest
	if err := decodeStrict(name, b, &m); err != nil {
		return nil, Counts{}, err
	}
	if m.Kind != manifestKind || m.FileDigestAlgorithm != fileDigestAlgorithm {
		return nil, Counts{}, invalid(name, "kind %q / file digest algorithm %q not supported", m.Kind, m.FileDigestAlgorithm)
	}
	definitions := map[deliveryset.Quadruple]bool{}
	var segments []ManifestFile
	for _, f := range m.Files {
		fname := objectPath(dir, f.SHA256)
		fb, err := readAddressed(fname, f.SHA256, f.Bytes)
		if err != nil {
			return nil, Counts{}, err
		}
		switch f.Role {
		case roleDefinition:
			q, err := verifyDefinition(fname, fb)
			if err != nil {
				return nil, Counts{}, err
			}
			definitions[q] = true
		case roleSegment:
			segments = append(segments, f)
		default:
			return nil, Counts{}, invalid(name, "file %s has unknown role %q", f.SHA256, f.Role)
		}
	}
	var got Counts
	var events []ManifestEvent
	for _, f := range segments {
		fname := objectPath(dir, f.SHA256)
		fb, _ := os.ReadFile(fname) // read and checked just above
		c, evs, err := verifySegment(fname, fb, func(q deliveryset.Quadruple) bool { return definitions[q] })
		if err != nil {
			return nil, Counts{}, err
		}
		got.add(c)
		events = append(events, evs...)
	}
	if got != m.Counts {
		return nil, Counts{}, invalid(name, "files hold %+v, manifest says %+v", got, m.Counts)
	}
	if !slices.Equal(events, m.Events) {
		return nil, Counts{}, invalid(name, "the segments' events and digests differ from the manifest's event list")
	}
	return &m, got, nil
}

// verifyDefinition checks an archived definition: its stored canonical
// document decodes strictly with the contracts, its digest recomputes and
// equals the registry row's quadruple.
func verifyDefinition(name string, b []byte) (deliveryset.Quadruple, error) {
	var d definitionDoc
	if err := decodeStrictPartial(name, b, &d); err != nil {
		return deliveryset.Quadruple{}, err
	}
	if d.Kind != definitionKind || len(d.Members) == 0 {
		return deliveryset.Quadruple{}, invalid(name, "kind %q or no members", d.Kind)
	}
	def, err := deliveryset.Decode([]byte(d.Version.DefinitionCanonicalJSON))
	if err != nil {
		return deliveryset.Quadruple{}, invalid(name, "definition does not decode or its digest does not recompute: %v", err)
	}
	if def.Quadruple() != d.Version.quadruple() {
		return deliveryset.Quadruple{}, invalid(name, "definition quadruple %+v differs from the registry row %+v", def.Quadruple(), d.Version.quadruple())
	}
	return def.Quadruple(), nil
}

// decodeStrictPartial decodes the top level strictly; the nested table
// rows are read field by field (their bytes are covered by the digest).
func decodeStrictPartial(name string, b []byte, v any) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return invalid(name, "decode: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return invalid(name, "decode: %v", err)
	}
	known, err := json.Marshal(v)
	if err != nil {
		return invalid(name, "decode: %v", err)
	}
	var knownTop map[string]json.RawMessage
	_ = json.Unmarshal(known, &knownTop) // just produced by json.Marshal
	for k := range top {
		if _, ok := knownTop[k]; !ok {
			return invalid(name, "unknown field %q", k)
		}
	}
	return nil
}

// verifySegment checks every archived event: envelope strictly decoded and
// canonical, its jcs-sha256-v1 digest recomputed with the contracts, a
// frozen definition the run archived, published, every delivery
// acknowledged, every attempt start and finish belonging to it.
func verifySegment(name string, b []byte, archived func(deliveryset.Quadruple) bool) (Counts, []ManifestEvent, error) {
	var s segmentDoc
	if err := decodeStrict(name, b, &s); err != nil {
		return Counts{}, nil, err
	}
	if s.Kind != segmentKind || len(s.Events) == 0 {
		return Counts{}, nil, invalid(name, "kind %q or no events", s.Kind)
	}
	var c Counts
	events := make([]ManifestEvent, 0, len(s.Events))
	for i, se := range s.Events {
		var e eventRow
		if err := unmarshalRow(name, se.Event, &e); err != nil {
			return Counts{}, nil, err
		}
		where := fmt.Sprintf("event %d (%s)", i, e.EventID)
		env, err := envelope.DecodeEnvelope([]byte(e.EventEnvelope))
		if err != nil {
			return Counts{}, nil, invalid(name, "%s: envelope does not decode: %v", where, err)
		}
		canonical, err := jcs.Canonicalize([]byte(e.EventEnvelope))
		if err != nil || !bytes.Equal(canonical, []byte(e.EventEnvelope)) {
			return Counts{}, nil, invalid(name, "%s: envelope is not canonical", where)
		}
		d, err := digest.OfCanonical(digest.Algorithm(e.EventEnvelopeDigestAlgorithmVersion), canonical)
		if err != nil || d.Value != e.EventEnvelopeSHA256 {
			return Counts{}, nil, invalid(name, "%s: envelope digest does not recompute", where)
		}
		if env.EventID != e.EventID {
			return Counts{}, nil, invalid(name, "%s: envelope names event %s", where, env.EventID)
		}
		if !archived(e.quadruple()) {
			return Counts{}, nil, invalid(name, "%s: frozen definition %+v is not in the run", where, e.quadruple())
		}
		if e.PublishedAt == nil {
			return Counts{}, nil, invalid(name, "%s: not published", where)
		}
		for _, raw := range se.Deliveries {
			var dl deliveryRow
			if err := unmarshalRow(name, raw, &dl); err != nil {
				return Counts{}, nil, err
			}
			if dl.EventID != e.EventID || dl.Status != "acknowledged" {
				return Counts{}, nil, invalid(name, "%s: delivery %s is %s of event %s", where, dl.Destination, dl.Status, dl.EventID)
			}
		}
		attempts := map[string]bool{}
		for _, raw := range se.AttemptStarts {
			var a attemptRow
			if err := unmarshalRow(name, raw, &a); err != nil {
				return Counts{}, nil, err
			}
			if a.EventID != e.EventID {
				return Counts{}, nil, invalid(name, "%s: attempt %s belongs to event %s", where, a.AttemptID, a.EventID)
			}
			attempts[a.AttemptID] = true
		}
		for _, raw := range se.AttemptFinishes {
			var a attemptRow
			if err := unmarshalRow(name, raw, &a); err != nil {
				return Counts{}, nil, err
			}
			if !attempts[a.AttemptID] {
				return Counts{}, nil, invalid(name, "%s: finish of attempt %s without its start", where, a.AttemptID)
			}
		}
		c.add(Counts{Events: 1, Deliveries: int64(len(se.Deliveries)),
			AttemptStarts: int64(len(se.AttemptStarts)), AttemptFinishes: int64(len(se.AttemptFinishes))})
		events = append(events, ManifestEvent{EventID: e.EventID,
			EventEnvelopeDigestAlgorithmVersion: e.EventEnvelopeDigestAlgorithmVersion, EventEnvelopeSHA256: e.EventEnvelopeSHA256})
	}
	return c, events, nil
}

// segmentSummary reads a segment's counts and event list without checking
// it (verifySegment does).
func segmentSummary(name string, b []byte) (Counts, []ManifestEvent, error) {
	var s segmentDoc
	if err := decodeStrict(name, b, &s); err != nil {
		return Counts{}, nil, err
	}
	var c Counts
	events := make([]ManifestEvent, 0, len(s.Events))
	for _, se := range s.Events {
		var e eventRow
		if err := unmarshalRow(name, se.Event, &e); err != nil {
			return Counts{}, nil, err
		}
		c.add(Counts{Events: 1, Deliveries: int64(len(se.Deliveries)),
			AttemptStarts: int64(len(se.AttemptStarts)), AttemptFinishes: int64(len(se.AttemptFinishes))})
		events = append(events, ManifestEvent{EventID: e.EventID,
			EventEnvelopeDigestAlgorithmVersion: e.EventEnvelopeDigestAlgorithmVersion, EventEnvelopeSHA256: e.EventEnvelopeSHA256})
	}
	return c, events, nil
}
