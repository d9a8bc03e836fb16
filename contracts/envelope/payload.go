package envelope

import (
	"fmt"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Payload is implemented by the generated struct of every exact pair's
// payload (payloads_gen.go). Map returns the payload tree an Envelope carries;
// PayloadOf reads one back.
type Payload interface {
	Map() map[string]any
	eventPair() (eventType, eventSchemaVersion string)
}

// PayloadOf reads e's payload as the generated struct T of its pair:
//
//	p, err := envelope.PayloadOf[envelope.RunCreatedV2_0Payload](e)
//
// e must be of T's exact pair (ErrUnknownEventPair otherwise) and its payload
// must pass the pair's strict description (the *strict.FieldError of the
// first violation otherwise, its path relative to the payload).
func PayloadOf[T any, P interface {
	*T
	Payload
	fromMap(map[string]any)
}](e *Envelope) (T, error) {
	var out T
	p := P(&out)
	eventType, version := p.eventPair()
	if e.EventType != eventType || e.EventSchemaVersion != version {
		return out, fmt.Errorf("%w, not %s (%s)", unknownPair(e), eventType, version)
	}
	pair, err := Pair(eventType, version)
	if err != nil {
		return out, err
	}
	r := &strict.Reader{}
	m := schema.DecodeObject(r.Root(e.Payload), schema.Ref{Def: pair.Payload})
	if err := r.Err(); err != nil {
		return out, fmt.Errorf("payload of %s: %w", eventType, err)
	}
	p.fromMap(m)
	return out, nil
}

func unknownPair(e *Envelope) error {
	return fmt.Errorf("%w: envelope is %s (%s)", ErrUnknownEventPair, e.EventType, e.EventSchemaVersion)
}
