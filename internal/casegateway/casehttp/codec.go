package casehttp

import (
	"encoding/json"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/operations/cases"
)

// canonical is x's canonical (JCS) body.
func canonical(x reconciliation.Sealed) (json.RawMessage, error) {
	if x == nil {
		return nil, nil
	}
	b, err := jcs.Marshal(x.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("casehttp: encode %s: %w", x.Kind(), err)
	}
	return b, nil
}

func encodeChain(ch *cases.Chain) (chainBody, error) {
	var b chainBody
	var err error
	for _, f := range []struct {
		dst *json.RawMessage
		x   reconciliation.Sealed
	}{{&b.Request, sealedOrNil(ch.Request)}, {&b.Preview, sealedOrNil(ch.Preview)}, {&b.Approval, sealedOrNil(ch.Approval)},
		{&b.JIT, sealedOrNil(ch.JIT)}, {&b.Candidate, sealedOrNil(ch.Candidate)}, {&b.Decision, sealedOrNil(ch.Decision)}} {
		if err == nil {
			*f.dst, err = canonical(f.x)
		}
	}
	return b, err
}

// sealedOrNil keeps a typed nil pointer from becoming a non-nil interface.
func sealedOrNil[T any, P interface {
	*T
	reconciliation.Sealed
}](p P) reconciliation.Sealed {
	if p == nil {
		return nil
	}
	return p
}

// decodeChain decodes every present object strictly (digests verified).
func decodeChain(b chainBody) (*cases.Chain, error) {
	ch := &cases.Chain{}
	var err error
	dec := func(raw json.RawMessage, f func([]byte) error) {
		if err == nil && len(raw) > 0 && string(raw) != "null" {
			err = f(raw)
		}
	}
	dec(b.Request, func(r []byte) (e error) { ch.Request, e = reconciliation.DecodeCommandRequest(r); return })
	dec(b.Preview, func(r []byte) (e error) { ch.Preview, e = reconciliation.DecodeImpactPreview(r); return })
	dec(b.Approval, func(r []byte) (e error) { ch.Approval, e = reconciliation.DecodeApproval(r); return })
	dec(b.JIT, func(r []byte) (e error) { ch.JIT, e = reconciliation.DecodeJitActivation(r); return })
	dec(b.Candidate, func(r []byte) (e error) { ch.Candidate, e = reconciliation.DecodeCandidate(r); return })
	dec(b.Decision, func(r []byte) (e error) { ch.Decision, e = reconciliation.DecodeDecision(r); return })
	if err == nil && ch.Request == nil {
		err = fmt.Errorf("%w: a chain without its request", reconciliation.ErrInvalidObject)
	}
	return ch, err
}

func (q quadBody) quad() strict.Quadruple {
	return strict.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: digest.Algorithm(q.DigestAlgorithmVersion), Digest: q.Digest}
}

func quadOf(q strict.Quadruple) quadBody {
	return quadBody{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: string(q.DigestAlgorithmVersion), Digest: q.Digest}
}
