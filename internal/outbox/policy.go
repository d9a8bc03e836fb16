package outbox

import (
	"fmt"
	"slices"

	"github.com/oceanway/core/contracts/route"
)

// ReleasePolicy is what a release requires of the active definition beyond
// the definition itself (DS-9): for each event type, the destinations that
// must be mandatory members of the pair. The engine knows no release; the
// caller builds the policy once (NewReleasePolicy) and gives it to its
// Appender. The zero policy requires nothing beyond the definition.
type ReleasePolicy struct {
	required map[string][]route.Destination
}

// NewReleasePolicy validates and copies the required destinations per event
// type: no empty event type, no event type without destinations, no empty
// or repeated destination.
func NewReleasePolicy(required map[string][]route.Destination) (ReleasePolicy, error) {
	p := ReleasePolicy{required: make(map[string][]route.Destination, len(required))}
	for eventType, dests := range required {
		if eventType == "" || len(dests) == 0 {
			return ReleasePolicy{}, fmt.Errorf("outbox: release policy: event type %q needs at least one destination", eventType)
		}
		for i, d := range dests {
			if d == "" || slices.Contains(dests[:i], d) {
				return ReleasePolicy{}, fmt.Errorf("outbox: release policy: %s: empty or repeated destination %q", eventType, d)
			}
		}
		p.required[eventType] = slices.Clone(dests)
	}
	return p, nil
}

// Required returns the destinations the policy requires for eventType.
func (p ReleasePolicy) Required(eventType string) []route.Destination {
	return slices.Clone(p.required[eventType])
}

// Appender appends events under one release policy. It is immutable and
// safe for concurrent use; build one per release at start-up.
type Appender struct {
	policy ReleasePolicy
}

// NewAppender returns an appender that proves every append against policy.
func NewAppender(policy ReleasePolicy) *Appender { return &Appender{policy: policy} }
