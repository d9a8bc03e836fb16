package envelope_test

import (
	"path/filepath"
	"testing"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
)

// CT-2: the strict envelope decoder never panics, and whatever it accepts
// re-canonicalizes to a document it accepts with the same digest; decoding
// that canonical document and encoding it again gives the same bytes (what
// BuildCanonical relies on to hand producers the bytes it decoded).
func FuzzDecodeEnvelope(f *testing.F) {
	goldentest.AddSeeds(f, filepath.Join("testdata", "golden", "*", "canonical.json"), filepath.Join("testdata", "negative", "*.json"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		e, err := envelope.DecodeEnvelope(doc)
		if err != nil {
			return
		}
		canonical, err := e.Canonical()
		if err != nil {
			t.Fatalf("accepted envelope does not canonicalize: %v", err)
		}
		if tree, err := jcs.Marshal(e.ToJSON()); err != nil || string(tree) != string(canonical) {
			t.Fatalf("Canonical differs from jcs.Marshal(ToJSON()): %v\n%s\n%s", err, canonical, tree)
		}
		back, err := envelope.DecodeEnvelope(canonical)
		if err != nil {
			t.Fatalf("canonical form rejected: %v", err)
		}
		again, err := back.Canonical()
		if err != nil || string(again) != string(canonical) {
			t.Fatalf("canonical form is not a fixed point: %v\n%s\n%s", err, canonical, again)
		}
		d1, _ := e.Digest()
		d2, _ := back.Digest()
		if d1 != d2 {
			t.Fatalf("digest changed across a round trip")
		}
	})
}
