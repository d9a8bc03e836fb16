package casehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/workload"
)

// Client calls one owner process's case calls as the signer's workload. It
// implements casegateway.Operations, casegateway.GrantIssuer,
// casegateway.Resolutions and operationsread.ResolutionDecisions; use it
// for the ones that process serves.
type Client struct {
	base   string
	signer *workload.Signer
	http   *http.Client
}

var (
	_ casegateway.Operations             = (*Client)(nil)
	_ casegateway.GrantIssuer            = (*Client)(nil)
	_ casegateway.Resolutions            = (*Client)(nil)
	_ operationsread.ResolutionDecisions = (*Client)(nil)
)

// NewClient calls baseURL (http:// or https://, tlsConfig for the latter).
func NewClient(baseURL string, signer *workload.Signer, tlsConfig *tls.Config) (*Client, error) {
	if signer == nil {
		return nil, errors.New("casehttp: the client needs a workload signer")
	}
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, fmt.Errorf("casehttp: base URL %q: want http:// or https://", baseURL)
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second}
	return &Client{base: strings.TrimRight(baseURL, "/"), signer: signer, http: &http.Client{Transport: tr, Timeout: 15 * time.Second}}, nil
}

// call posts in to call and decodes the 200 answer into out; a refusal is
// its typed error (or ErrRefused / ErrUnavailable).
func (c *Client) call(ctx context.Context, call string, in, out any) error {
	token, err := c.signer.Sign(callers[call].audience, Scope(call))
	if err != nil {
		return fmt.Errorf("%w: sign: %w", ErrUnavailable, err)
	}
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("casehttp: encode %s: %w", call, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathPrefix+call, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, call, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%w: read %s answer: %w", ErrUnavailable, call, err)
	}
	if resp.StatusCode != http.StatusOK {
		var r refusal
		_ = json.Unmarshal(raw, &r)
		if typed, ok := errorOf(r.Code); ok {
			return fmt.Errorf("%w: %s", typed, r.Message)
		}
		if resp.StatusCode >= 500 {
			return fmt.Errorf("%w: %s: %d %s", ErrUnavailable, call, resp.StatusCode, r.Message)
		}
		return fmt.Errorf("%w: %s: %d %s: %s", ErrRefused, call, resp.StatusCode, r.Code, r.Message)
	}
	if err := decode(raw, out); err != nil {
		return fmt.Errorf("%w: %s answer: %w", ErrUnavailable, call, err)
	}
	return nil
}

func (c *Client) chain(ctx context.Context, call string, in any) (*cases.Chain, error) {
	var b chainBody
	if err := c.call(ctx, call, in, &b); err != nil {
		return nil, err
	}
	return decodeChain(b)
}

// Request implements casegateway.Operations.
func (c *Client) Request(ctx context.Context, assertion string, in cases.RequestInput) (*cases.Chain, error) {
	ev := make([]Evidence, 0, len(in.Evidence))
	for _, e := range in.Evidence {
		q := quadOf(e.Object)
		ev = append(ev, Evidence{Kind: e.EvidenceKind, Ref: q.Ref, SchemaVersion: q.SchemaVersion,
			DigestAlgorithmVersion: q.DigestAlgorithmVersion, Digest: q.Digest})
	}
	return c.chain(ctx, CallRequest, requestBody{Assertion: assertion, CaseRef: in.CaseRef, OperationID: in.OperationID,
		Evidence: ev, Justification: in.Justification})
}

// Approve implements casegateway.Operations.
func (c *Client) Approve(ctx context.Context, assertion, requestRef string) (*cases.Chain, error) {
	return c.chain(ctx, CallApprove, refBody{Assertion: assertion, RequestRef: requestRef})
}

// Decide implements casegateway.Operations.
func (c *Client) Decide(ctx context.Context, assertion, requestRef string) (*cases.Chain, error) {
	return c.chain(ctx, CallDecide, refBody{Assertion: assertion, RequestRef: requestRef})
}

// ReadFinalizationResolutionDecision implements operationsread.ResolutionDecisions.
func (c *Client) ReadFinalizationResolutionDecision(ctx context.Context, req operationsread.ResolutionDecisionRead) (ownerread.Answer, error) {
	var b answerBody
	if err := c.call(ctx, CallReadDecision, readDecisionBody{Decision: quadOf(req.Decision), Candidate: quadOf(req.Candidate),
		CaseRef: req.CaseRef, Generation: req.Generation}, &b); err != nil {
		return "", err
	}
	a := ownerread.Answer(b.Answer)
	if !a.Valid() {
		return "", fmt.Errorf("%w: answer %q", ErrUnavailable, b.Answer)
	}
	return a, nil
}

// Exchange implements casegateway.GrantIssuer (the workload is this
// client's signer, whatever req.Workload says).
func (c *Client) Exchange(ctx context.Context, req grants.ExchangeRequest) (grants.Exchanged, error) {
	ch, err := encodeChain(&cases.Chain{Request: req.Request, Preview: req.Preview, Approval: req.Approval, JIT: req.JIT,
		Candidate: req.Candidate, Decision: req.Decision})
	if err != nil {
		return grants.Exchanged{}, err
	}
	var b exchangedBody
	if err := c.call(ctx, CallExchange, exchangeBody{Assertion: req.Assertion, Chain: ch}, &b); err != nil {
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

// ApplyResolution implements casegateway.Resolutions.
func (c *Client) ApplyResolution(ctx context.Context, cmd billing.ResolutionCommand) (billing.ResolutionResult, error) {
	cand, err := canonical(cmd.Candidate)
	if err != nil {
		return billing.ResolutionResult{}, err
	}
	dec, err := canonical(cmd.Decision)
	if err != nil {
		return billing.ResolutionResult{}, err
	}
	var b appliedBody
	if err := c.call(ctx, CallApply, applyBody{Grant: cmd.Grant, Candidate: cand, Decision: dec}, &b); err != nil {
		return billing.ResolutionResult{}, err
	}
	fact, err := reconciliation.DecodeApplied(b.Applied)
	if err != nil {
		return billing.ResolutionResult{}, fmt.Errorf("%w: applied fact: %w", ErrUnavailable, err)
	}
	return billing.ResolutionResult{Fact: fact, Body: b.Applied, EventID: b.EventID, Replayed: b.Replayed}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }
