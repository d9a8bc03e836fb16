package retention

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oceanway/core/contracts/jcs"
)

// Layout of an archive directory: content-addressed files only.
const (
	manifestsDir = "manifests"
	objectsDir   = "objects"
	fileSuffix   = ".json"

	manifestKind   = "oceanway.outbox-archive-manifest@1"
	segmentKind    = "oceanway.outbox-archive-segment@1"
	definitionKind = "oceanway.outbox-archive-definition@1"

	roleSegment    = "segment"
	roleDefinition = "definition"

	// fileDigestAlgorithm: every file holds RFC 8785 canonical bytes, so the
	// SHA-256 of the file is its jcs-sha256-v1 digest.
	fileDigestAlgorithm = "jcs-sha256-v1"
)

// Manifest describes one archive run: what its files are and what it holds.
// Its own digest (the SHA-256 of its canonical bytes) is its file name and
// the run's manifest digest recorded by outbox.retention_archive.
type Manifest struct {
	Kind                string          `json:"kind"`
	RunID               string          `json:"runId"`
	SourceDatabase      string          `json:"sourceDatabase"`
	Cutoff              string          `json:"cutoff"`
	FileDigestAlgorithm string          `json:"fileDigestAlgorithm"`
	Counts              Counts          `json:"counts"`
	Files               []ManifestFile  `json:"files"`
	Events              []ManifestEvent `json:"events"`
}

// Counts are the rows a run archives (and removes).
type Counts struct {
	Events          int64 `json:"events"`
	Deliveries      int64 `json:"deliveries"`
	AttemptStarts   int64 `json:"attemptStarts"`
	AttemptFinishes int64 `json:"attemptFinishes"`
}

func (c *Counts) add(o Counts) {
	c.Events += o.Events
	c.Deliveries += o.Deliveries
	c.AttemptStarts += o.AttemptStarts
	c.AttemptFinishes += o.AttemptFinishes
}

// ManifestFile is one content-addressed file of a run.
type ManifestFile struct {
	Role   string `json:"role"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// ManifestEvent is one archived event and its stored envelope digest, in
// segment order: what outbox.retention_archive compares with the hot row.
type ManifestEvent struct {
	EventID                             string `json:"eventId"`
	EventEnvelopeDigestAlgorithmVersion string `json:"eventEnvelopeDigestAlgorithmVersion"`
	EventEnvelopeSHA256                 string `json:"eventEnvelopeSha256"`
}

// canonicalJSON encodes v with encoding/json and canonicalizes it (RFC
// 8785): the bytes a file holds and its digest covers.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Canonicalize(raw)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// writeObject stores canonical bytes under dir/sub/<sha256>.json, durably:
// temporary file, fsync, rename, fsync of the directory. An existing file of
// that name must hold the same bytes (content addressing: equal content,
// equal file); created says whether this call added the file.
func writeObject(dir, sub string, content []byte) (sum string, created bool, err error) {
	sum = sha256Hex(content)
	folder := filepath.Join(dir, sub)
	if err := os.MkdirAll(folder, 0o750); err != nil {
		return "", false, fmt.Errorf("archive: %w", err)
	}
	final := filepath.Join(folder, sum+fileSuffix)
	if existing, err := os.ReadFile(final); err == nil {
		if !bytes.Equal(existing, content) {
			return "", false, invalid(final, "exists with other content than its name's digest")
		}
		return sum, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("archive: %w", err)
	}
	tmp := filepath.Join(folder, ".tmp-"+rand.Text())
	if err := writeSynced(tmp, content); err != nil {
		_ = os.Remove(tmp) // best effort; verify reports leftovers
		return "", false, err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp) // best effort; verify reports leftovers
		return "", false, fmt.Errorf("archive: %w", err)
	}
	if err := syncDir(folder); err != nil {
		return sum, true, err
	}
	return sum, true, syncDir(dir)
}

func writeSynced(name string, content []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if _, err := f.Write(content); err != nil {
		_ = f.Close()
		return fmt.Errorf("archive: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("archive: fsync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("archive: close %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer func() { _ = d.Close() }() // read-only handle; the fsync below is what counts
	if err := d.Sync(); err != nil {
		return fmt.Errorf("archive: fsync %s: %w", dir, err)
	}
	return nil
}
