package jcs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
)

// benchDoc builds a deterministic contract-like document of about size
// bytes: records with UUIDs, integers, fractions, escaped and non-ASCII
// strings, arrays and nested objects, written with keys out of order.
func benchDoc(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"schemaVersion":"Bench@1","records":[`)
	for i := 0; b.Len() < size-120; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"zeta":%d,"id":"%08x-7b1c-7def-8a00-0123456789ab","amountMinor":%d,"ratio":%g,`+
			`"label":"Grüße \"%d\" \u00e9\n😀","tags":["b","a","\ufb33"],"nested":{"y":null,"x":1e-7,"w":true}}`,
			i, i*7919, int64(i)*104729, float64(i)/7, i)
	}
	b.WriteString(`],"digestAlgorithmVersion":"jcs-sha256-v1"}`)
	return []byte(b.String())
}

// BenchmarkCanonicalizeDigest measures what a consumer does with a received
// document: parse strictly, canonicalize, SHA-256. CI runs it once with
// -benchtime=1x -short, so it stays cheap and is not skipped under -short.
func BenchmarkCanonicalizeDigest(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}} {
		doc := benchDoc(size.bytes)
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				canonical, err := jcs.Canonicalize(doc)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := digest.OfCanonical(digest.JCSSHA256V1, canonical); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshalDigest measures what a producer does with a value tree it
// built: canonicalize and SHA-256 (digest.Of).
func BenchmarkMarshalDigest(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}} {
		tree, err := jcs.Parse(benchDoc(size.bytes))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := digest.Of(digest.JCSSHA256V1, tree); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseEnvelope measures the strict parse of one canonical event
// envelope (≈1 KiB), the first step of every envelope and receipt decode.
func BenchmarkParseEnvelope(b *testing.B) {
	doc, err := os.ReadFile(filepath.Join("..", "envelope", "testdata", "golden", "run.created@2.0", "canonical.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := jcs.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}
