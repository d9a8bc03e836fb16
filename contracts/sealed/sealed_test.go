package sealed_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/sealed"
	"github.com/oceanway/core/contracts/strict"
)

var errInvalid = errors.New("test: invalid object")

type unknownObject struct{ q strict.Quadruple }

func (u *unknownObject) Kind() string            { return "Unknown@1" }
func (u *unknownObject) ToJSON() map[string]any  { return map[string]any{} }
func (u *unknownObject) Quad() *strict.Quadruple { return &u.q }

// attemptSetRegistry registers RunAttemptSetManifest@1 with the given rules.
func attemptSetRegistry(t *testing.T, rules func(map[string]any) error) (sealed.Registry, []byte) {
	t.Helper()
	self, ok := execution.SelfAddressing(execution.KindRunAttemptSetManifest)
	if !ok {
		t.Fatal("no self-addressing for RunAttemptSetManifest@1")
	}
	var def sealed.Spec
	for _, c := range execution.Contracts() {
		if c.Name == execution.KindRunAttemptSetManifest {
			def = sealed.Spec{Def: c.Def, Self: self, Rules: rules}
		}
	}
	doc, err := os.ReadFile("../execution/testdata/golden/RunAttemptSetManifest@1/two_attempts/canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	return sealed.Registry{Invalid: errInvalid, Specs: func() map[string]sealed.Spec {
		return map[string]sealed.Spec{execution.KindRunAttemptSetManifest: def}
	}}, doc
}

// Fail closed: an unregistered kind is refused by Seal (with the package's
// sentinel), Decode and DigestOf.
func TestSealDecodeDigest_UnknownKindRefused(t *testing.T) {
	r := sealed.Registry{Invalid: errInvalid, Specs: func() map[string]sealed.Spec { return nil }}
	if _, err := r.Seal(&unknownObject{}); !errors.Is(err, errInvalid) {
		t.Fatalf("Seal: got %v, want %v", err, errInvalid)
	}
	if _, err := r.Decode("Unknown@1", []byte(`{}`)); err == nil || err.Error() != "decode Unknown@1: unknown kind" {
		t.Fatalf("Decode: got %v", err)
	}
	if _, err := r.DigestOf(&unknownObject{}, digest.JCSSHA256V1); err == nil || err.Error() != "digest Unknown@1: unknown kind" {
		t.Fatalf("DigestOf: got %v", err)
	}
}

// Refinement rules run on every decode and their error is kept in the chain.
func TestDecode_RulesApplied(t *testing.T) {
	errRule := errors.New("test: rule")
	r, doc := attemptSetRegistry(t, func(map[string]any) error { return errRule })
	if _, err := r.Decode(execution.KindRunAttemptSetManifest, doc); !errors.Is(err, errRule) {
		t.Fatalf("got %v, want %v", err, errRule)
	}
	r, _ = attemptSetRegistry(t, nil)
	if _, err := r.Decode(execution.KindRunAttemptSetManifest, doc); err != nil {
		t.Fatalf("golden refused without rules: %v", err)
	}
}

// CT-3: a document whose carried digest does not recompute is refused, and
// DigestDoc reproduces the carried digest of a valid one.
func TestDecode_CT3_DigestMustRecompute(t *testing.T) {
	r, doc := attemptSetRegistry(t, nil)
	d, err := r.DigestDoc(execution.KindRunAttemptSetManifest, doc, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(d.Value)) {
		t.Fatalf("digest %s is not the carried one", d.Value)
	}
	tampered := bytes.Replace(doc, []byte(d.Value), []byte(d.Value[:len(d.Value)-1]+flip(d.Value[len(d.Value)-1])), 1)
	if _, err := r.Decode(execution.KindRunAttemptSetManifest, tampered); err == nil {
		t.Fatal("tampered digest accepted")
	}
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}
