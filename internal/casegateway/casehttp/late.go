package casehttp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// The late settlement command's calls (issue 32 part 2): Operations' late
// request, approval and decision, its late decision read for Core's
// issuer, and Core's late grant exchange. Billing's late calls
// (DecideFunding, ApplyLateSettlementCommand) are Billing's to serve.
const (
	CallRequestLate      = "request-late"
	CallApproveLate      = "approve-late"
	CallDecideLate       = "decide-late"
	CallReadLateDecision = "read-late-decision"
	CallExchangeLate     = "exchange-late"
)

var (
	_ casegateway.LateOperations   = (*Client)(nil)
	_ casegateway.LateGrantIssuer  = (*Client)(nil)
	_ operationsread.LateDecisions = (*Client)(nil)
)

type requestLateBody struct {
	Assertion                 string     `json:"assertion"`
	CaseRef                   string     `json:"caseRef"`
	LateSettlementExposureID  string     `json:"lateSettlementExposureId"`
	CommandRequestOperationID string     `json:"commandRequestOperationId"`
	Evidence                  []Evidence `json:"evidence"`
	Justification             string     `json:"justification"`
}

type exchangeLateBody struct {
	Assertion string    `json:"assertion"`
	Chain     chainBody `json:"chain"`
}

func (cfg ServerConfig) serveLate(served map[string]func(ctx context.Context, caller string, body []byte) (any, error)) {
	if cfg.LateOperations != nil && cfg.LateDecisions != nil {
		served[CallRequestLate], served[CallApproveLate], served[CallDecideLate] = cfg.requestLate, cfg.approveLate, cfg.decideLate
		served[CallReadLateDecision] = cfg.readLateDecision
	}
	if cfg.LateGrants != nil {
		served[CallExchangeLate] = cfg.exchangeLate
	}
}

func (cfg ServerConfig) requestLate(ctx context.Context, _ string, body []byte) (any, error) {
	var b requestLateBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ev := make([]reconciliation.EvidenceReference, 0, len(b.Evidence))
	for _, e := range b.Evidence {
		ev = append(ev, reconciliation.EvidenceReference{EvidenceKind: e.Kind, Object: strict.Quadruple{Ref: e.Ref,
			SchemaVersion: e.SchemaVersion, DigestAlgorithmVersion: digest.Algorithm(e.DigestAlgorithmVersion), Digest: e.Digest}})
	}
	ch, err := cfg.LateOperations.RequestLate(ctx, b.Assertion, cases.LateRequestInput{CaseRef: b.CaseRef,
		LateSettlementExposureID: b.LateSettlementExposureID, Evidence: ev, Justification: b.Justification,
		CommandRequestOperationID: b.CommandRequestOperationID})
	if err != nil {
		return nil, err
	}
	return encodeLateChain(ch)
}

func (cfg ServerConfig) approveLate(ctx context.Context, _ string, body []byte) (any, error) {
	var b refBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ch, err := cfg.LateOperations.ApproveLate(ctx, b.Assertion, b.RequestRef)
	if err != nil {
		return nil, err
	}
	return encodeLateChain(ch)
}

func (cfg ServerConfig) decideLate(ctx context.Context, _ string, body []byte) (any, error) {
	var b refBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ch, err := cfg.LateOperations.DecideLate(ctx, b.Assertion, b.RequestRef)
	if err != nil {
		return nil, err
	}
	return encodeLateChain(ch)
}

func (cfg ServerConfig) readLateDecision(ctx context.Context, _ string, body []byte) (any, error) {
	var b readDecisionBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ans, err := cfg.LateDecisions.ReadLateSettlementCommandDecision(ctx, operationsread.LateDecisionRead{
		Decision: b.Decision.quad(), Candidate: b.Candidate.quad(), CaseRef: b.CaseRef, Generation: b.Generation})
	if err != nil {
		return nil, err
	}
	return answerBody{Answer: string(ans)}, nil
}

func (cfg ServerConfig) exchangeLate(ctx context.Context, caller string, body []byte) (any, error) {
	var b exchangeLateBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ch, err := decodeLateChain(b.Chain)
	if err != nil {
		return nil, &badRequest{err}
	}
	// The calling workload is the token's, never a field of the body.
	ex, err := cfg.LateGrants.ExchangeLate(ctx, grants.LateExchangeRequest{Assertion: b.Assertion, Workload: caller, Request: ch.Request,
		Preview: ch.Preview, Approval: ch.Approval, JIT: ch.JIT, Candidate: ch.Candidate, Decision: ch.Decision})
	if err != nil {
		return nil, err
	}
	res, err := canonical(ex.Result)
	if err != nil {
		return nil, err
	}
	return exchangedBody{Grant: ex.Grant, Result: res, Replayed: ex.Replayed}, nil
}

func (c *Client) lateChain(ctx context.Context, call string, in any) (*cases.LateChain, error) {
	var b chainBody
	if err := c.call(ctx, call, in, &b); err != nil {
		return nil, err
	}
	return decodeLateChain(b)
}

// RequestLate implements casegateway.LateOperations.
func (c *Client) RequestLate(ctx context.Context, assertion string, in cases.LateRequestInput) (*cases.LateChain, error) {
	ev := make([]Evidence, 0, len(in.Evidence))
	for _, e := range in.Evidence {
		q := quadOf(e.Object)
		ev = append(ev, Evidence{Kind: e.EvidenceKind, Ref: q.Ref, SchemaVersion: q.SchemaVersion,
			DigestAlgorithmVersion: q.DigestAlgorithmVersion, Digest: q.Digest})
	}
	return c.lateChain(ctx, CallRequestLate, requestLateBody{Assertion: assertion, CaseRef: in.CaseRef,
		LateSettlementExposureID: in.LateSettlementExposureID, CommandRequestOperationID: in.CommandRequestOperationID,
		Evidence: ev, Justification: in.Justification})
}

// ApproveLate implements casegateway.LateOperations.
func (c *Client) ApproveLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error) {
	return c.lateChain(ctx, CallApproveLate, refBody{Assertion: assertion, RequestRef: requestRef})
}

// DecideLate implements casegateway.LateOperations.
func (c *Client) DecideLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error) {
	return c.lateChain(ctx, CallDecideLate, refBody{Assertion: assertion, RequestRef: requestRef})
}

// ReadLateSettlementCommandDecision implements operationsread.LateDecisions.
func (c *Client) ReadLateSettlementCommandDecision(ctx context.Context, req operationsread.LateDecisionRead) (ownerread.Answer, error) {
	var b answerBody
	if err := c.call(ctx, CallReadLateDecision, readDecisionBody{Decision: quadOf(req.Decision), Candidate: quadOf(req.Candidate),
		CaseRef: req.CaseRef, Generation: req.Generation}, &b); err != nil {
		return "", err
	}
	a := ownerread.Answer(b.Answer)
	if !a.Valid() {
		return "", fmt.Errorf("%w: answer %q", ErrUnavailable, b.Answer)
	}
	return a, nil
}

// ExchangeLate implements casegateway.LateGrantIssuer (the workload is
// this client's signer, whatever req.Workload says).
func (c *Client) ExchangeLate(ctx context.Context, req grants.LateExchangeRequest) (grants.Exchanged, error) {
	ch, err := encodeLateChain(&cases.LateChain{Request: req.Request, Preview: req.Preview, Approval: req.Approval, JIT: req.JIT,
		Candidate: req.Candidate, Decision: req.Decision})
	if err != nil {
		return grants.Exchanged{}, err
	}
	var b exchangedBody
	if err := c.call(ctx, CallExchangeLate, exchangeLateBody{Assertion: req.Assertion, Chain: ch}, &b); err != nil {
		return grants.Exchanged{}, err
	}
	res, err := reconciliation.DecodeGrantExchangeResult(b.Result)
	if err != nil {
		return grants.Exchanged{}, fmt.Errorf("%w: exchange result: %w", ErrUnavailable, err)
	}
	if reconciliation.GrantSHA256(b.Grant) != res.GrantSHA256 {
		return grants.Exchanged{}, fmt.Errorf("%w: the grant is not the result's", ErrUnavailable)
	}
	return grants.Exchanged{Grant: b.Grant, Result: res, Replayed: b.Replayed}, nil
}

func encodeLateChain(ch *cases.LateChain) (chainBody, error) {
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

// decodeLateChain decodes every present late object strictly (digests
// verified).
func decodeLateChain(b chainBody) (*cases.LateChain, error) {
	ch := &cases.LateChain{}
	var err error
	dec := func(raw json.RawMessage, f func([]byte) error) {
		if err == nil && len(raw) > 0 && string(raw) != "null" {
			err = f(raw)
		}
	}
	dec(b.Request, func(r []byte) (e error) { ch.Request, e = reconciliation.DecodeLateCommandRequest(r); return })
	dec(b.Preview, func(r []byte) (e error) { ch.Preview, e = reconciliation.DecodeLateImpactPreview(r); return })
	dec(b.Approval, func(r []byte) (e error) { ch.Approval, e = reconciliation.DecodeLateApproval(r); return })
	dec(b.JIT, func(r []byte) (e error) { ch.JIT, e = reconciliation.DecodeLateJitActivation(r); return })
	dec(b.Candidate, func(r []byte) (e error) { ch.Candidate, e = reconciliation.DecodeLateCandidate(r); return })
	dec(b.Decision, func(r []byte) (e error) { ch.Decision, e = reconciliation.DecodeLateDecision(r); return })
	if err == nil && ch.Request == nil {
		err = fmt.Errorf("%w: a late chain without its request", reconciliation.ErrInvalidObject)
	}
	return ch, err
}
