// Package kinds is the registry of contract kinds the CLI can validate and
// digest by their spec names (e.g. "DeliverySetDefinition",
// "CanonicalEventEnvelope@1", "ActiveConsumerAck@1"). Each contract family
// registers its kinds from its own file in this package.
package kinds

import (
	"errors"
	"fmt"
	"sort"

	"github.com/oceanway/core/contracts/digest"
)

// ErrUnknownKind is returned for a kind name that is not registered.
var ErrUnknownKind = errors.New("kinds: unknown contract kind")

// Kind validates one document of a contract kind.
type Kind struct {
	// Validate strictly decodes the document, checks every refinement rule
	// and, for content-addressed objects, that the embedded digest recomputes.
	Validate func(doc []byte) error
	// Digest returns the digest of the document's digest candidate (nil when
	// the kind is not content-addressed).
	Digest func(doc []byte) (digest.Digest, error)
}

var registry = map[string]Kind{}

func register(name string, k Kind) {
	if _, dup := registry[name]; dup {
		panic("kinds: duplicate registration of " + name)
	}
	registry[name] = k
}

// Lookup returns the kind registered under name.
func Lookup(name string) (Kind, error) {
	k, ok := registry[name]
	if !ok {
		return Kind{}, fmt.Errorf("%w: %q (known: %v)", ErrUnknownKind, name, Names())
	}
	return k, nil
}

// Names lists the registered kinds, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
