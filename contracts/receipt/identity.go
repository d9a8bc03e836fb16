package receipt

import "github.com/oceanway/core/contracts/strict"

// identityMode says how a receipt identity field is compared with the event.
type identityMode int

const (
	// identityRequired: the event must carry the field (fail closed) and it must be equal.
	identityRequired identityMode = iota
	// identitySymmetric: an optional field (projectId?); presence and value must both match.
	identitySymmetric
)

type identityField struct {
	name  string
	value string // "" = absent (identitySymmetric only)
	mode  identityMode
}

// identitySet is the business identity a receipt carries, by the field names
// the spec spells (the same names the event payload uses), values in text
// form (integers in decimal).
type identitySet []identityField

func (s *identitySet) req(name, value string) {
	*s = append(*s, identityField{name, value, identityRequired})
}

func (s *identitySet) sym(name, value string) {
	*s = append(*s, identityField{name, value, identitySymmetric})
}

func (s *identitySet) reqInt(name string, n int64) { s.req(name, itoa(n)) }

func (s *identitySet) reqQuad(prefix string, q strict.Quadruple) {
	f := strict.Fields(prefix)
	s.req(f[0], q.Ref)
	s.req(f[1], q.SchemaVersion)
	s.req(f[2], string(q.DigestAlgorithmVersion))
	s.req(f[3], q.Digest)
}

// Identity returns the identity fields the receipt is compared on, as a map
// (for diagnostics and tests). Optional fields the receipt lacks are omitted.
func identityMap(s identitySet) map[string]string {
	m := make(map[string]string, len(s))
	for _, f := range s {
		if f.value != "" {
			m[f.name] = f.value
		}
	}
	return m
}
