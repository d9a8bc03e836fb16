package deliveryset_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oceanway/core/contracts/deliveryset"
)

// DS-1, CT-2: the definition decoder never panics, and whatever it accepts
// re-encodes canonically to a document it accepts.
func FuzzDecodeDeliverySet(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "golden", "first-release", "canonical.json")); err == nil {
		f.Add(b)
	}
	negatives, _ := filepath.Glob(filepath.Join("testdata", "negative", "*.json"))
	for _, n := range negatives {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
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
