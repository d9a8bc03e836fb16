package casehttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/workload"
)

// maxBody bounds a request body (a whole chain is a few KB).
const maxBody = 256 << 10

// ServerConfig is what one process serves: any of Operations (with the
// decision read), Core's grant exchange and Billing's resolutions.
type ServerConfig struct {
	// Operations serves request, approve, decide and read-decision.
	Operations casegateway.Operations
	Decisions  operationsread.ResolutionDecisions
	// Grants serves exchange.
	Grants casegateway.GrantIssuer
	// Billing serves apply.
	Billing casegateway.Resolutions
	// LateOperations (with LateDecisions) serves the late request,
	// approval, decision and decision read; LateGrants the late exchange.
	LateOperations casegateway.LateOperations
	LateDecisions  operationsread.LateDecisions
	LateGrants     casegateway.LateGrantIssuer
	// Verifiers verify the tokens of each served audience.
	Verifiers map[string]*workload.Verifier
	Log       *slog.Logger
}

// Handler serves POST /v1/cases/{call} for the configured services.
func Handler(cfg ServerConfig) (http.Handler, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	served := map[string]func(ctx context.Context, caller string, body []byte) (any, error){}
	if cfg.Operations != nil && cfg.Decisions != nil {
		served[CallRequest], served[CallApprove], served[CallDecide] = cfg.request, cfg.approve, cfg.decide
		served[CallReadDecision] = cfg.readDecision
	}
	if cfg.Grants != nil {
		served[CallExchange] = cfg.exchange
	}
	if cfg.Billing != nil {
		served[CallApply] = cfg.apply
	}
	cfg.serveLate(served)
	for call := range served {
		if cfg.Verifiers[callers[call].audience] == nil {
			return nil, fmt.Errorf("casehttp: %s is served without a verifier for %s", call, callers[call].audience)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathPrefix+"{call}", func(w http.ResponseWriter, req *http.Request) {
		call := req.PathValue("call")
		answer, ok := served[call]
		if !ok {
			refuse(w, http.StatusNotFound, CodeUnknown, "no such case call here: "+call)
			return
		}
		token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		claims, err := cfg.Verifiers[callers[call].audience].Verify(token, Scope(call))
		if err != nil {
			refuse(w, http.StatusUnauthorized, CodeUnauth, err.Error())
			return
		}
		if !slices.Contains(callers[call].allowed, claims.Subject) {
			refuse(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf("%s may not call %s", claims.Subject, call))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
		if err != nil {
			refuse(w, http.StatusBadRequest, CodeBadRequest, err.Error())
			return
		}
		out, err := answer(req.Context(), claims.Subject, body)
		var bad *badRequest
		switch {
		case errors.As(err, &bad):
			refuse(w, http.StatusBadRequest, CodeBadRequest, bad.Error())
		case err != nil:
			if code, ok := codeOf(err); ok {
				refuse(w, http.StatusConflict, code, err.Error())
				return
			}
			cfg.Log.Error("case call failed", "call", call, "err", err)
			refuse(w, http.StatusServiceUnavailable, CodeInternal, "the owner failed; retry")
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(out)
		}
	})
	return mux, nil
}

// badRequest is a body that does not decode.
type badRequest struct{ err error }

func (b *badRequest) Error() string { return b.err.Error() }

// decode reads body strictly into v.
func decode(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &badRequest{err}
	}
	if d.More() {
		return &badRequest{errors.New("trailing data")}
	}
	return nil
}

func (cfg ServerConfig) request(ctx context.Context, _ string, body []byte) (any, error) {
	var b requestBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ev := make([]reconciliation.EvidenceReference, 0, len(b.Evidence))
	for _, e := range b.Evidence {
		ev = append(ev, reconciliation.EvidenceReference{EvidenceKind: e.Kind, Object: strict.Quadruple{Ref: e.Ref,
			SchemaVersion: e.SchemaVersion, DigestAlgorithmVersion: digest.Algorithm(e.DigestAlgorithmVersion), Digest: e.Digest}})
	}
	ch, err := cfg.Operations.Request(ctx, b.Assertion, cases.RequestInput{CaseRef: b.CaseRef, OperationID: b.OperationID,
		Evidence: ev, Justification: b.Justification})
	if err != nil {
		return nil, err
	}
	return encodeChain(ch)
}

func (cfg ServerConfig) approve(ctx context.Context, _ string, body []byte) (any, error) {
	var b refBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ch, err := cfg.Operations.Approve(ctx, b.Assertion, b.RequestRef)
	if err != nil {
		return nil, err
	}
	return encodeChain(ch)
}

func (cfg ServerConfig) decide(ctx context.Context, _ string, body []byte) (any, error) {
	var b refBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ch, err := cfg.Operations.Decide(ctx, b.Assertion, b.RequestRef)
	if err != nil {
		return nil, err
	}
	return encodeChain(ch)
}

func (cfg ServerConfig) readDecision(ctx context.Context, _ string, body []byte) (any, error) {
	var b readDecisionBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ans, err := cfg.Decisions.ReadFinalizationResolutionDecision(ctx, operationsread.ResolutionDecisionRead{
		Decision: b.Decision.quad(), Candidate: b.Candidate.quad(), CaseRef: b.CaseRef, Generation: b.Generation})
	if err != nil {
		return nil, err
	}
	return answerBody{Answer: string(ans)}, nil
}

func (cfg ServerConfig) exchange(ctx context.Context, caller string, body []byte) (any, error) {
	var b exchangeBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	ch, err := decodeChain(b.Chain)
	if err != nil {
		return nil, &badRequest{err}
	}
	// The calling workload is the token's, never a field of the body.
	ex, err := cfg.Grants.Exchange(ctx, grants.ExchangeRequest{Assertion: b.Assertion, Workload: caller, Request: ch.Request,
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

func (cfg ServerConfig) apply(ctx context.Context, _ string, body []byte) (any, error) {
	var b applyBody
	if err := decode(body, &b); err != nil {
		return nil, err
	}
	cand, err := reconciliation.DecodeCandidate(b.Candidate)
	if err != nil {
		return nil, &badRequest{err}
	}
	dec, err := reconciliation.DecodeDecision(b.Decision)
	if err != nil {
		return nil, &badRequest{err}
	}
	res, err := cfg.Billing.ApplyResolution(ctx, billing.ResolutionCommand{Grant: b.Grant, Candidate: cand, Decision: dec})
	if err != nil {
		return nil, err
	}
	return appliedBody{Applied: res.Body, EventID: res.EventID, Replayed: res.Replayed}, nil
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(refusal{Code: code, Message: msg})
}
