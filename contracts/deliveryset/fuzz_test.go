package deliveryset_test

import (
	"path/filepath"
	"testing"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/goldentest"
)

// DS-1, CT-2: the definition decoder never panics, and whatever it accepts
// re-encodes canonically to a document it accepts.
func FuzzDecodeDeliverySet(f *testing.F) {
	goldentest.AddSeeds(f, filepath.Join("testdata", "golden", "first-release", "canonical.json"), filepath.Join("testdata", "negative", "*.json"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		d, err := deliveryset.Decode(doc)
		if err != nil {
			return
		}
		canonical, err := d.Canonical()
		if err != nil {
			t.Fatalf("accepted definition does not canonicalize: %v", err)
		}
		if _, err := deliveryset.Decode(canonical); err != nil {
			t.Fatalf("canonical form rejected: %v", err)
		}
	})
}
