package receipt_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
)

// seedCorpus adds every golden and negative artefact of the given kinds.
func seedCorpus(f *testing.F, kinds ...string) {
	for _, kind := range kinds {
		for _, pattern := range []string{
			filepath.Join("testdata", "golden", kind, "*", "raw.json"),
			filepath.Join("testdata", "golden", kind, "*", "canonical.json"),
			filepath.Join("testdata", "negative", kind, "*.json"),
		} {
			files, err := filepath.Glob(pattern)
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range files {
				b, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`"ok"`))
	f.Add([]byte(`{"appliedReceipt":"ok"}`))
}

// FuzzDecodeActiveConsumerAck: the decoder never panics, and an accepted ack
// re-encodes to canonical bytes that decode to the same ack (OB-DELIVER-3, CT-2).
func FuzzDecodeActiveConsumerAck(f *testing.F) {
	seedCorpus(f, receipt.KindActiveConsumerAck)
	f.Fuzz(func(t *testing.T, doc []byte) {
		a, err := receipt.DecodeActiveConsumerAck(doc)
		if err != nil {
			return
		}
		canonical, err := jcs.Marshal(a.ToJSON())
		if err != nil {
			t.Fatalf("accepted ack does not canonicalize: %v", err)
		}
		again, err := receipt.DecodeActiveConsumerAck(canonical)
		if err != nil {
			t.Fatalf("re-encoded ack rejected: %v", err)
		}
		if *again != *a {
			t.Fatalf("round trip changed the ack: %+v vs %+v", again, a)
		}
		if want, _ := jcs.Canonicalize(doc); string(want) != string(canonical) {
			t.Fatalf("re-encoding differs from the input's canonical form")
		}
	})
}

// FuzzDecodeReceipt: every receipt decoder never panics; an accepted receipt
// re-encodes to its input's canonical bytes, decodes again and keeps its
// digest verdict (CT-2, CT-3).
func FuzzDecodeReceipt(f *testing.F) {
	seedCorpus(f,
		receipt.KindOperationsProjectionAppliedReceipt,
		receipt.KindMeteringInputProcessorConsumerReceipt,
		receipt.KindBillingFinalizationCoordinatorConsumerReceipt,
		receipt.KindBillingSettlementCatchUpConsumerReceipt,
	)
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, dest := range route.Destinations {
			r, err := receipt.DecodeReceipt(dest, doc)
			if err != nil {
				if r != nil {
					t.Fatalf("%s: error with a non-nil receipt", dest)
				}
				continue
			}
			canonical, err := jcs.Marshal(r.ToJSON())
			if err != nil {
				t.Fatalf("%s: accepted receipt does not canonicalize: %v", dest, err)
			}
			if want, _ := jcs.Canonicalize(doc); string(want) != string(canonical) {
				t.Fatalf("%s: re-encoding differs from the input's canonical form", dest)
			}
			again, err := receipt.DecodeReceipt(dest, canonical)
			if err != nil {
				t.Fatalf("%s: re-encoded receipt rejected: %v", dest, err)
			}
			if (r.VerifyDigest() == nil) != (again.VerifyDigest() == nil) {
				t.Fatalf("%s: digest verdict changed by re-encoding", dest)
			}
		}
	})
}

// FuzzContracts runs every registered kind's Validate and Digest on the same
// input: no panic, and Digest succeeds whenever Validate does.
func FuzzContracts(f *testing.F) {
	var kinds []string
	for _, c := range receipt.Contracts() {
		kinds = append(kinds, c.Name)
	}
	seedCorpus(f, kinds...)
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, c := range receipt.Contracts() {
			err := c.Validate(doc)
			if c.Digest == nil {
				continue
			}
			if _, derr := c.Digest(doc); err == nil && derr != nil {
				t.Fatalf("%s: valid document does not digest: %v", c.Name, derr)
			}
		}
	})
}
