package ownerhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
	"github.com/oceanway/core/internal/workload"
)

// ClientConfig configures a client of one owner's read endpoint.
type ClientConfig struct {
	// Owner is the owner whose reads are called (its audience).
	Owner string
	// BaseURL is the owner process (http://host:port or https://host:port).
	BaseURL string
	// Signer signs a fresh token per call as the calling workload.
	Signer *workload.Signer
	// TLS is used for https (RootCAs: the CA of the provided certificates).
	TLS *tls.Config
	// Timeout bounds one call on top of the caller's context (default
	// 10s); DialTimeout bounds connecting (default 3s).
	Timeout     time.Duration
	DialTimeout time.Duration
	// Metrics counts the calls (default: unregistered).
	Metrics *Metrics
}

// Client calls one owner's reads over HTTP. Its typed views (Core,
// Execution, Gateway, Metering) implement the same Reader interfaces as the
// owner's in-process Reads.
type Client struct {
	cfg  ClientConfig
	http *http.Client
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	switch {
	case cfg.Signer == nil:
		return nil, errors.New("ownerhttp: the client needs a workload signer")
	case cfg.Owner != OwnerCore && cfg.Owner != OwnerExecution && cfg.Owner != OwnerGateway && cfg.Owner != OwnerMetering:
		return nil, fmt.Errorf("ownerhttp: unknown owner %q", cfg.Owner)
	case !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://"):
		return nil, fmt.Errorf("ownerhttp: base URL of %s is %q: want http:// or https://", cfg.Owner, cfg.BaseURL)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	tr := &http.Transport{
		Proxy:               nil, // internal calls never go through an environment proxy
		DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     cfg.TLS,
		TLSHandshakeTimeout: cfg.DialTimeout,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// call posts req to read and decodes the 200 answer; every other outcome is
// an *Error classified by its Unwrap.
func (c *Client) call(ctx context.Context, read string, req any) (answer, error) {
	start := time.Now()
	a, err := c.post(ctx, read, req)
	outcome := OutcomeAnswered
	var herr *Error
	switch {
	case errors.Is(err, ownerread.ErrInvalidRequest):
		outcome = OutcomeInvalidRequest
	case errors.As(err, &herr) && (herr.Code == CodeUnauthorized || herr.Code == CodeForbidden):
		outcome = OutcomeRefused
	case err != nil:
		outcome = OutcomeUnavailable
	}
	c.cfg.Metrics.Calls.WithLabelValues(c.cfg.Owner, read, outcome).Inc()
	c.cfg.Metrics.Latency.WithLabelValues(c.cfg.Owner, read).Observe(time.Since(start).Seconds())
	return a, err
}

func (c *Client) post(ctx context.Context, read string, req any) (answer, error) {
	token, err := c.cfg.Signer.Sign(Audience(c.cfg.Owner), Scope(read))
	if err != nil {
		return answer{}, fmt.Errorf("%w: sign: %w", ErrUnavailable, err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return answer{}, fmt.Errorf("%w: encode request: %w", ownerread.ErrInvalidRequest, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+PathPrefix+read, bytes.NewReader(body))
	if err != nil {
		return answer{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(hreq)
	if err != nil {
		return answer{}, &Error{Read: read, Code: CodeUnavailable, Message: err.Error()}
	}
	defer func() { _ = resp.Body.Close() }() // read (bounded) below; a close error changes no answer
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil || len(raw) > MaxBody {
		return answer{}, &Error{Read: read, Status: resp.StatusCode, Code: CodeUnavailable, Message: fmt.Sprintf("answer unreadable or too large: %v", err)}
	}
	if resp.StatusCode != http.StatusOK {
		var p problem
		if json.Unmarshal(raw, &p) != nil || p.Code == "" {
			p = problem{Code: CodeUnavailable, Message: resp.Status}
		}
		return answer{}, &Error{Read: read, Status: resp.StatusCode, Code: p.Code, Message: p.Message}
	}
	var a answer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return answer{}, badAnswer(read, err.Error())
	}
	return a, nil
}

// Core is the client's view of Core's reads (coreread.ManifestReader and
// the two Billing reads the Operations projector calls).
func (c *Client) Core() CoreReads { return CoreReads{c} }

// Execution is the client's view as executionread.Reader.
func (c *Client) Execution() executionread.Reader { return executionReads{c} }

// Gateway is the client's view as gatewayread.Reader.
func (c *Client) Gateway() gatewayread.Reader { return gatewayReads{c} }

// Metering is the client's view as meteringread.Reader.
func (c *Client) Metering() meteringread.Reader { return meteringReads{c} }

// CoreReads are Core's reads over HTTP.
type CoreReads struct{ c *Client }

func (r CoreReads) ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	a, err := r.c.call(ctx, coreread.ReadRunAdmissionManifestV1, req)
	if err != nil {
		return coreread.ManifestResult{}, err
	}
	return resultOf(coreread.ReadRunAdmissionManifestV1, a, execution.DecodeRunAdmissionManifest, func(v *execution.RunAdmissionManifest) bool {
		return v.Manifest == req.Manifest && v.RunID == req.RunID
	})
}

func (r CoreReads) ReadBillingFinalizationCommitted(ctx context.Context, req coreread.FinalizationCommittedRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadBillingFinalizationCommittedV1, req)
}

func (r CoreReads) ReadBillingSettlementTransition(ctx context.Context, req coreread.SettlementTransitionRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadBillingSettlementTransitionV1, req)
}

func (r CoreReads) ReadBillingFinalizationDecisionForOperations(ctx context.Context, req coreread.FinalizationDecisionForOperationsRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadBillingFinalizationDecisionForOpsV1, req)
}

func (r CoreReads) ReadFinalizationReconciliationResolutionAppliedForOperations(ctx context.Context, req coreread.ResolutionAppliedForOperationsRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadResolutionAppliedForOpsV1, req)
}

func (r CoreReads) ReadLateSettlementExposureForOperations(ctx context.Context, req coreread.LateExposureCaseRequestRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadLateExposureForOpsV1, req)
}

func (r CoreReads) ReadLateSettlementCommandResultForOperations(ctx context.Context, req coreread.LateCommandResultRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadLateResultForOpsV1, req)
}

func (r CoreReads) ReadBillingCaseResolutionAppliedForOperations(ctx context.Context, req coreread.CaseResolutionAppliedRead) (ownerread.Answer, error) {
	return r.c.answerOnly(ctx, ReadCaseResolutionAppliedForOpsV1, req)
}

func (c *Client) answerOnly(ctx context.Context, read string, req any) (ownerread.Answer, error) {
	a, err := c.call(ctx, read, req)
	if err != nil {
		return "", err
	}
	if !ownerread.Answer(a.Answer).Valid() {
		return "", badAnswer(read, fmt.Sprintf("answer %q", a.Answer))
	}
	return ownerread.Answer(a.Answer), nil
}

type executionReads struct{ c *Client }

func (r executionReads) ReadEligibilityFact(ctx context.Context, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error) {
	a, err := r.c.call(ctx, executionread.ReadEligibilityFactV1, req)
	if err != nil {
		return executionread.EligibilityFactResult{}, err
	}
	const read = executionread.ReadEligibilityFactV1
	res, err := resultOf(read, a, execution.DecodeExecutionEligibilityFact, func(v *execution.ExecutionEligibilityFact) bool {
		return v.Fact == req.Fact && v.RunID == req.RunID
	})
	if err != nil {
		return executionread.EligibilityFactResult{}, err
	}
	out := executionread.EligibilityFactResult{Result: res}
	if len(a.ConflictBody) > 0 {
		if res.Answer != ownerread.Conflicting {
			return executionread.EligibilityFactResult{}, badAnswer(read, "a conflict fact with answer "+string(res.Answer))
		}
		if out.Conflict, err = execution.DecodeExecutionEligibilityConflictFact(a.ConflictBody); err != nil {
			return executionread.EligibilityFactResult{}, badAnswer(read, "conflict fact: "+err.Error())
		}
		if out.Conflict.ExecutionAttemptID != req.ExecutionAttemptID || out.Conflict.RequestedFact != req.Fact {
			return executionread.EligibilityFactResult{}, badAnswer(read, "the conflict fact names another attempt or fact")
		}
		out.ConflictBody = a.ConflictBody
	}
	return out, nil
}

func (r executionReads) ReadAttemptManifest(ctx context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	a, err := r.c.call(ctx, executionread.ReadAttemptManifestV1, req)
	if err != nil {
		return executionread.AttemptManifestResult{}, err
	}
	return resultOf(executionread.ReadAttemptManifestV1, a, execution.DecodeAttemptExecutionManifest, func(v *execution.AttemptExecutionManifest) bool {
		return v.Manifest == req.AttemptManifest && v.ExecutionAttemptID == req.ExecutionAttemptID
	})
}

func (r executionReads) ReadRunFinalizationPrecondition(ctx context.Context, req executionread.RunFinalizationPreconditionRead) (executionread.PreconditionResult, error) {
	const read = executionread.ReadRunFinalizationPreconditionV1
	a, err := r.c.call(ctx, read, req)
	if err != nil {
		return executionread.PreconditionResult{}, err
	}
	out := executionread.PreconditionResult{Answer: a.Answer, Body: a.Body, ConflictBody: a.ConflictBody}
	switch a.Answer {
	case executionread.PreconditionClosed:
		if out.Fact, err = execution.DecodeRunExecutionFinalizationFact(a.Body); err != nil {
			return executionread.PreconditionResult{}, badAnswer(read, "closed fact: "+err.Error())
		}
	case executionread.PreconditionConflicting:
		if out.Conflict, err = execution.DecodeRunExecutionFinalizationConflictFact(a.ConflictBody); err != nil {
			return executionread.PreconditionResult{}, badAnswer(read, "conflict fact: "+err.Error())
		}
	case executionread.PreconditionNotClosed, executionread.PreconditionRunNotFound:
	default:
		return executionread.PreconditionResult{}, badAnswer(read, fmt.Sprintf("answer %q", a.Answer))
	}
	return out, nil
}

func (r executionReads) ReadRunExecutionFinalization(ctx context.Context, req executionread.RunExecutionFinalizationRead) (executionread.RunExecutionFinalizationResult, error) {
	const read = execution.ReadRunExecutionFinalizationV1
	a, err := r.c.call(ctx, read, req)
	if err != nil {
		return executionread.RunExecutionFinalizationResult{}, err
	}
	res, err := resultOf(read, a, execution.DecodeRunExecutionFinalizationReceipt, func(v *execution.RunExecutionFinalizationReceipt) bool {
		return v.FinalizationOperationID == req.FinalizationOperationID && v.InputManifest == req.InputManifest
	})
	if err != nil {
		return executionread.RunExecutionFinalizationResult{}, err
	}
	out := executionread.RunExecutionFinalizationResult{Result: res}
	if len(a.ConflictBody) > 0 {
		if out.Conflict, err = execution.DecodeRunExecutionFinalizationConflictFact(a.ConflictBody); err != nil {
			return executionread.RunExecutionFinalizationResult{}, badAnswer(read, "conflict fact: "+err.Error())
		}
		out.ConflictBody = a.ConflictBody
	}
	return out, nil
}

type gatewayReads struct{ c *Client }

func (r gatewayReads) ReadDispatchSlot(ctx context.Context, req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
	a, err := r.c.call(ctx, gatewayread.ReadDispatchSlotV1, req)
	if err != nil {
		return gatewayread.SlotResult{}, err
	}
	res := gatewayread.SlotResult{Answer: ownerread.Answer(a.Answer), Reason: a.Reason}
	switch {
	case !res.Answer.Valid():
		return gatewayread.SlotResult{}, badAnswer(gatewayread.ReadDispatchSlotV1, fmt.Sprintf("answer %q", a.Answer))
	case res.Answer == ownerread.Found && a.Slot == nil:
		return gatewayread.SlotResult{}, badAnswer(gatewayread.ReadDispatchSlotV1, "found without a slot")
	case res.Answer == ownerread.Found:
		res.Value = *a.Slot
	}
	return res, nil
}

func (r gatewayReads) ReadAvailabilitySnapshot(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	a, err := r.c.call(ctx, gatewayread.ReadAvailabilitySnapshotV1, req)
	if err != nil {
		return gatewayread.AvailabilityResult{}, err
	}
	return resultOf(gatewayread.ReadAvailabilitySnapshotV1, a, execution.DecodeAvailabilitySnapshot, func(v *execution.AvailabilitySnapshot) bool {
		return v.Snapshot == req.Snapshot
	})
}

func (r gatewayReads) ReadProviderEvidence(ctx context.Context, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error) {
	a, err := r.c.call(ctx, gatewayread.ReadProviderEvidenceV1, req)
	if err != nil {
		return gatewayread.ProviderEvidenceResult{}, err
	}
	const read = gatewayread.ReadProviderEvidenceV1
	res, err := resultOf(read, a, execution.DecodeProviderEvidence, func(v *execution.ProviderEvidence) bool {
		return v.Evidence == req.Evidence
	})
	if err != nil {
		return gatewayread.ProviderEvidenceResult{}, err
	}
	out := gatewayread.ProviderEvidenceResult{Result: res}
	if len(a.ConflictBody) > 0 {
		if res.Answer != ownerread.Conflicting {
			return gatewayread.ProviderEvidenceResult{}, badAnswer(read, "a conflict fact with answer "+string(res.Answer))
		}
		if out.Conflict, err = execution.DecodeGatewayEvidenceConflictFact(a.ConflictBody); err != nil {
			return gatewayread.ProviderEvidenceResult{}, badAnswer(read, "conflict fact: "+err.Error())
		}
		if out.Conflict.Evidence != req.Evidence {
			return gatewayread.ProviderEvidenceResult{}, badAnswer(read, "the conflict fact names other evidence")
		}
		out.ConflictBody = a.ConflictBody
	}
	return out, nil
}

func (r gatewayReads) ValidateAvailabilityCurrent(ctx context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	a, err := r.c.call(ctx, gatewayread.ValidateAvailabilityCurrentV1, req)
	if err != nil {
		return gatewayread.AvailabilityValidationResult{}, err
	}
	return resultOf(gatewayread.ValidateAvailabilityCurrentV1, a, execution.DecodeAvailabilityCurrentValidationReceipt, func(v *execution.AvailabilityCurrentValidationReceipt) bool {
		return v.OperationID == req.OperationID && v.Purpose == req.Purpose
	})
}

func (r gatewayReads) ReadAttemptUsageDimensions(ctx context.Context, req gatewayread.AttemptUsageDimensionsRead) ([]string, error) {
	a, err := r.c.call(ctx, gatewayread.ReadAttemptUsageDimensionsV1, req)
	if err != nil {
		return nil, err
	}
	if a.Answer != string(ownerread.Found) {
		return nil, badAnswer(gatewayread.ReadAttemptUsageDimensionsV1, fmt.Sprintf("answer %q", a.Answer))
	}
	return a.Dimensions, nil
}

type meteringReads struct{ c *Client }

func (r meteringReads) ReadAttemptSettlementInputs(ctx context.Context, executionAttemptID string) ([]*meteringread.SettlementInput, error) {
	a, err := r.c.call(ctx, ReadAttemptSettlementInputsV1, attemptRead{ExecutionAttemptID: executionAttemptID})
	if err != nil {
		return nil, err
	}
	return inputsOf(ReadAttemptSettlementInputsV1, a)
}

func (r meteringReads) ReadCurrentSettlementInput(ctx context.Context, settlementDimensionID string) (*meteringread.SettlementInput, error) {
	a, err := r.c.call(ctx, ReadCurrentSettlementInputV1, dimensionRead{SettlementDimensionID: settlementDimensionID})
	if err != nil {
		return nil, err
	}
	ins, err := inputsOf(ReadCurrentSettlementInputV1, a)
	if err != nil {
		return nil, err
	}
	if len(ins) != 1 || ins[0].Snapshot.SettlementDimensionID != settlementDimensionID {
		return nil, badAnswer(ReadCurrentSettlementInputV1, "not exactly the requested dimension's snapshot")
	}
	return ins[0], nil
}

func (r meteringReads) ReadSettlementInputAt(ctx context.Context, settlementDimensionID string, stateVersion int64) (*meteringread.SettlementInput, error) {
	a, err := r.c.call(ctx, ReadSettlementInputAtV1, settlementAtRead{SettlementDimensionID: settlementDimensionID, StateVersion: stateVersion})
	if err != nil {
		return nil, err
	}
	ins, err := inputsOf(ReadSettlementInputAtV1, a)
	if err != nil {
		return nil, err
	}
	if len(ins) != 1 || ins[0].Snapshot.SettlementDimensionID != settlementDimensionID || ins[0].Ref.StateVersion != stateVersion {
		return nil, badAnswer(ReadSettlementInputAtV1, "not exactly the requested snapshot")
	}
	return ins[0], nil
}

func (r meteringReads) ValidateSettlementInputCurrent(ctx context.Context, req meteringread.SettlementValidationRequest) (meteringread.SettlementValidation, error) {
	a, err := r.c.call(ctx, ValidateSettlementInputCurrentV1, req)
	if err != nil {
		return meteringread.SettlementValidation{}, err
	}
	if a.Answer == string(ownerread.Conflicting) {
		f, err := meterfacts.DecodeSettlementInputConflictFact(a.ConflictBody)
		if err != nil {
			return meteringread.SettlementValidation{}, badAnswer(ValidateSettlementInputCurrentV1, "conflict fact: "+err.Error())
		}
		if f.SettlementDimensionID != req.SettlementDimensionID || f.Validated != req.Snapshot.Snapshot || f.ValidatedStateVersion != req.Snapshot.StateVersion {
			return meteringread.SettlementValidation{}, badAnswer(ValidateSettlementInputCurrentV1, "a conflict fact about another settlement input")
		}
		return meteringread.SettlementValidation{Conflict: f, ConflictBody: a.ConflictBody}, nil
	}
	rec, err := meterfacts.DecodeSettlementInputCurrentValidationReceipt(a.Body)
	if err != nil || a.Current == nil {
		return meteringread.SettlementValidation{}, badAnswer(ValidateSettlementInputCurrentV1, fmt.Sprintf("receipt: %v", err))
	}
	if rec.OperationID != req.OperationID || rec.Purpose != req.Purpose || rec.SettlementDimensionID != req.SettlementDimensionID {
		return meteringread.SettlementValidation{}, badAnswer(ValidateSettlementInputCurrentV1, "a receipt of another operation, purpose or dimension")
	}
	return meteringread.SettlementValidation{Receipt: rec, Body: a.Body, Current: *a.Current}, nil
}

// inputsOf decodes each settlement input from its canonical body and checks
// the body is the five-tuple the owner named.
func inputsOf(read string, a answer) ([]*meteringread.SettlementInput, error) {
	if a.Answer != string(ownerread.Found) {
		return nil, badAnswer(read, fmt.Sprintf("answer %q", a.Answer))
	}
	out := make([]*meteringread.SettlementInput, 0, len(a.Inputs))
	for _, in := range a.Inputs {
		s, err := settlement.Decode(in.Body)
		if err != nil {
			return nil, badAnswer(read, "settlement input: "+err.Error())
		}
		if s.Current() != in.Ref {
			return nil, badAnswer(read, "settlement input body is not its five-tuple")
		}
		out = append(out, &meteringread.SettlementInput{Ref: in.Ref, Body: in.Body, Snapshot: s})
	}
	return out, nil
}
