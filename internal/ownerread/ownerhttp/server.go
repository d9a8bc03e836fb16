package ownerhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
	"github.com/oceanway/core/internal/workload"
)

// Served are the owner reads one process answers: each non-nil reader's
// reads are mounted, under its owner's audience.
type Served struct {
	Manifest              coreread.ManifestReader
	FinalizationCommitted coreread.FinalizationCommittedReader
	SettlementTransition  coreread.SettlementTransitionReader
	CaseDecision          coreread.FinalizationDecisionForOperationsReader
	CaseResolution        coreread.ResolutionAppliedForOperationsReader
	LateExposure          coreread.LateExposureCaseRequestReader
	LateResult            coreread.LateCommandResultReader
	CaseResolutionApplied coreread.CaseResolutionAppliedReader
	Execution             executionread.Reader
	Gateway               gatewayread.Reader
	Metering              meteringread.Reader
}

// ServerConfig configures Handler.
type ServerConfig struct {
	Served Served
	// Verifiers verify the tokens of each served owner's audience
	// (Audience(owner)); an owner without one is not served.
	Verifiers map[string]*workload.Verifier
	Log       *slog.Logger
}

// route is one read: its owner (the audience) and how its request is
// decoded and answered.
type route struct {
	owner  string
	answer func(ctx context.Context, raw []byte) (answer, error)
}

// Handler serves POST /v1/owner-reads/{read} for every served read.
func Handler(cfg ServerConfig) (http.Handler, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	routes := routesOf(cfg.Served)
	for read, r := range routes {
		if cfg.Verifiers[r.owner] == nil {
			return nil, fmt.Errorf("ownerhttp: %s is served without a verifier for %s", read, Audience(r.owner))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathPrefix+"{read}", func(w http.ResponseWriter, req *http.Request) {
		read := req.PathValue("read")
		rt, ok := routes[read]
		if !ok {
			refuse(w, http.StatusNotFound, CodeUnknownRead, "no such owner read here: "+read)
			return
		}
		token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		// The token is checked before the body is read: a refused caller
		// never reaches the owner's database.
		claims, err := cfg.Verifiers[rt.owner].Verify(token, Scope(read))
		if err != nil {
			cfg.Log.Warn("owner read refused", "read", read, "reason", workload.Reason(err))
			refuse(w, http.StatusUnauthorized, CodeUnauthorized, err.Error())
			return
		}
		// The token proves who calls; the read decides which owners may.
		if caller, ok := CallerOwner(claims.Subject); !ok || !slices.Contains(Callers[read], caller) {
			cfg.Log.Warn("owner read refused", "read", read, "reason", "caller", "workload", claims.Subject)
			refuse(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf("workload %q may not call %s (callers: %v)", claims.Subject, read, Callers[read]))
			return
		}
		raw, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
		if err != nil || len(raw) > MaxBody {
			refuse(w, http.StatusBadRequest, CodeBadRequest, "request body unreadable or too large")
			return
		}
		a, err := rt.answer(req.Context(), raw)
		var decodeErr *decodeError
		switch {
		case errors.As(err, &decodeErr):
			// The wire, not the owner, refused it (a caller of another
			// version, say): not the event's fault, the caller retries.
			refuse(w, http.StatusBadRequest, CodeBadRequest, decodeErr.Error())
			return
		case errors.Is(err, ownerread.ErrInvalidRequest):
			refuse(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		case err != nil:
			// The owner's own error stays here: the caller learns only
			// that it could not answer.
			cfg.Log.Warn("owner read failed", "read", read, "err", err)
			refuse(w, http.StatusServiceUnavailable, CodeOwnerError, "the owner could not answer "+read)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a) // the caller retries a lost answer
	})
	return mux, nil
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problem{Code: code, Message: msg})
}

// decodeError is a request the wire refused before the owner saw it.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return "request: " + e.err.Error() }

// decodeStrict decodes exactly one JSON object into v: every key spelled
// exactly as the request type's field (encoding/json alone would match
// keys case-insensitively), none twice, none unknown, nothing after it.
func decodeStrict(raw []byte, v any) error {
	if err := exactKeys(json.NewDecoder(bytes.NewReader(raw)), reflect.TypeOf(v).Elem()); err != nil {
		return &decodeError{err}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &decodeError{err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &decodeError{errors.New("trailing data after the request")}
	}
	return nil
}

// exactKeys walks one JSON value against t: an object for a struct (keys
// are exactly its exported field names or json tags, each at most once),
// an array for a slice, anything else as encoding/json will check it.
func exactKeys(dec *json.Decoder, t reflect.Type) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch d := tok.(type) {
	case json.Delim:
		switch {
		case d == '{' && t.Kind() == reflect.Struct && !t.Implements(textUnmarshaler) && !reflect.PointerTo(t).Implements(textUnmarshaler):
			fields := fieldsOf(t)
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				name, _ := k.(string)
				ft, ok := fields[name]
				switch {
				case !ok:
					return fmt.Errorf("unknown field %q", name)
				case seen[name]:
					return fmt.Errorf("field %q twice", name)
				}
				seen[name] = true
				if err := exactKeys(dec, ft); err != nil {
					return err
				}
			}
			_, err = dec.Token() // '}'
			return err
		case d == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			for dec.More() {
				if err := exactKeys(dec, t.Elem()); err != nil {
					return err
				}
			}
			_, err = dec.Token() // ']'
			return err
		}
		return skipRest(dec)
	case nil:
		return errors.New("null where a value is required")
	}
	return nil
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()

// skipRest consumes the rest of a composite value whose type encoding/json
// checks by itself.
func skipRest(dec *json.Decoder) error {
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// fieldsOf maps the JSON names of t's exported fields (embedded structs
// flattened, as encoding/json does) to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range fieldsOf(f.Type) {
				if _, shadowed := out[k]; !shadowed {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// serve builds a route whose request is Req.
func serve[Req any](owner string, fn func(ctx context.Context, req Req) (answer, error)) route {
	return route{owner: owner, answer: func(ctx context.Context, raw []byte) (answer, error) {
		var req Req
		if err := decodeStrict(raw, &req); err != nil {
			return answer{}, err
		}
		return fn(ctx, req)
	}}
}

// attemptRead is the request of the two attempt-keyed Metering reads.
type attemptRead struct {
	ExecutionAttemptID string
}

// dimensionRead is the request of the Current read.
type dimensionRead struct {
	SettlementDimensionID string
}

// settlementAtRead is the request of the lineage read.
type settlementAtRead struct {
	SettlementDimensionID string
	StateVersion          int64
}

func routesOf(s Served) map[string]route {
	out := map[string]route{}
	if r := s.Manifest; r != nil {
		out[coreread.ReadRunAdmissionManifestV1] = serve(OwnerCore, func(ctx context.Context, req coreread.RunAdmissionManifestRead) (answer, error) {
			res, err := r.ReadRunAdmissionManifest(ctx, req)
			return answerOf(res), err
		})
	}
	if r := s.FinalizationCommitted; r != nil {
		out[ReadBillingFinalizationCommittedV1] = serve(OwnerCore, func(ctx context.Context, req coreread.FinalizationCommittedRead) (answer, error) {
			a, err := r.ReadBillingFinalizationCommitted(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.SettlementTransition; r != nil {
		out[ReadBillingSettlementTransitionV1] = serve(OwnerCore, func(ctx context.Context, req coreread.SettlementTransitionRead) (answer, error) {
			a, err := r.ReadBillingSettlementTransition(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.CaseDecision; r != nil {
		out[ReadBillingFinalizationDecisionForOpsV1] = serve(OwnerCore, func(ctx context.Context, req coreread.FinalizationDecisionForOperationsRead) (answer, error) {
			a, err := r.ReadBillingFinalizationDecisionForOperations(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.CaseResolution; r != nil {
		out[ReadResolutionAppliedForOpsV1] = serve(OwnerCore, func(ctx context.Context, req coreread.ResolutionAppliedForOperationsRead) (answer, error) {
			a, err := r.ReadFinalizationReconciliationResolutionAppliedForOperations(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.LateExposure; r != nil {
		out[ReadLateExposureForOpsV1] = serve(OwnerCore, func(ctx context.Context, req coreread.LateExposureCaseRequestRead) (answer, error) {
			a, err := r.ReadLateSettlementExposureForOperations(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.LateResult; r != nil {
		out[ReadLateResultForOpsV1] = serve(OwnerCore, func(ctx context.Context, req coreread.LateCommandResultRead) (answer, error) {
			a, err := r.ReadLateSettlementCommandResultForOperations(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.CaseResolutionApplied; r != nil {
		out[ReadCaseResolutionAppliedForOpsV1] = serve(OwnerCore, func(ctx context.Context, req coreread.CaseResolutionAppliedRead) (answer, error) {
			a, err := r.ReadBillingCaseResolutionAppliedForOperations(ctx, req)
			return answer{Answer: string(a)}, err
		})
	}
	if r := s.Execution; r != nil {
		out[executionread.ReadEligibilityFactV1] = serve(OwnerExecution, func(ctx context.Context, req executionread.EligibilityFactRead) (answer, error) {
			res, err := r.ReadEligibilityFact(ctx, req)
			a := answerOf(res.Result)
			a.ConflictBody = res.ConflictBody
			return a, err
		})
		out[executionread.ReadAttemptManifestV1] = serve(OwnerExecution, func(ctx context.Context, req executionread.AttemptManifestRead) (answer, error) {
			res, err := r.ReadAttemptManifest(ctx, req)
			return answerOf(res), err
		})
		out[executionread.ReadRunFinalizationPreconditionV1] = serve(OwnerExecution, func(ctx context.Context, req executionread.RunFinalizationPreconditionRead) (answer, error) {
			res, err := r.ReadRunFinalizationPrecondition(ctx, req)
			return answer{Answer: res.Answer, Body: res.Body, ConflictBody: res.ConflictBody}, err
		})
		out[contract.ReadRunExecutionFinalizationV1] = serve(OwnerExecution, func(ctx context.Context, req executionread.RunExecutionFinalizationRead) (answer, error) {
			res, err := r.ReadRunExecutionFinalization(ctx, req)
			a := answerOf(res.Result)
			a.ConflictBody = res.ConflictBody
			return a, err
		})
	}
	if r := s.Gateway; r != nil {
		out[gatewayread.ReadDispatchSlotV1] = serve(OwnerGateway, func(ctx context.Context, req gatewayread.DispatchSlotRead) (answer, error) {
			res, err := r.ReadDispatchSlot(ctx, req)
			a := answer{Answer: string(res.Answer), Reason: res.Reason}
			if res.Answer == ownerread.Found {
				a.Slot = &res.Value
			}
			return a, err
		})
		out[gatewayread.ReadAvailabilitySnapshotV1] = serve(OwnerGateway, func(ctx context.Context, req gatewayread.AvailabilitySnapshotRead) (answer, error) {
			res, err := r.ReadAvailabilitySnapshot(ctx, req)
			return answerOf(res), err
		})
		out[gatewayread.ReadProviderEvidenceV1] = serve(OwnerGateway, func(ctx context.Context, req gatewayread.ProviderEvidenceRead) (answer, error) {
			res, err := r.ReadProviderEvidence(ctx, req)
			a := answerOf(res.Result)
			a.ConflictBody = res.ConflictBody
			return a, err
		})
		out[gatewayread.ValidateAvailabilityCurrentV1] = serve(OwnerGateway, func(ctx context.Context, req gatewayread.AvailabilityValidationRequest) (answer, error) {
			res, err := r.ValidateAvailabilityCurrent(ctx, req)
			return answerOf(res), err
		})
		out[gatewayread.ReadAttemptUsageDimensionsV1] = serve(OwnerGateway, func(ctx context.Context, req gatewayread.AttemptUsageDimensionsRead) (answer, error) {
			dims, err := r.ReadAttemptUsageDimensions(ctx, req)
			return answer{Answer: string(ownerread.Found), Dimensions: dims}, err
		})
	}
	if r := s.Metering; r != nil {
		out[ReadAttemptSettlementInputsV1] = serve(OwnerMetering, func(ctx context.Context, req attemptRead) (answer, error) {
			ins, err := r.ReadAttemptSettlementInputs(ctx, req.ExecutionAttemptID)
			a := answer{Answer: string(ownerread.Found), Inputs: []input{}}
			for _, in := range ins {
				a.Inputs = append(a.Inputs, input{Ref: in.Ref, Body: in.Body})
			}
			return a, err
		})
		out[ReadSettlementInputAtV1] = serve(OwnerMetering, func(ctx context.Context, req settlementAtRead) (answer, error) {
			in, err := r.ReadSettlementInputAt(ctx, req.SettlementDimensionID, req.StateVersion)
			if err != nil {
				return answer{}, err
			}
			return answer{Answer: string(ownerread.Found), Inputs: []input{{Ref: in.Ref, Body: in.Body}}}, nil
		})
		out[ReadCurrentSettlementInputV1] = serve(OwnerMetering, func(ctx context.Context, req dimensionRead) (answer, error) {
			in, err := r.ReadCurrentSettlementInput(ctx, req.SettlementDimensionID)
			if err != nil {
				return answer{}, err
			}
			return answer{Answer: string(ownerread.Found), Inputs: []input{{Ref: in.Ref, Body: in.Body}}}, nil
		})
		out[ValidateSettlementInputCurrentV1] = serve(OwnerMetering, func(ctx context.Context, req meteringread.SettlementValidationRequest) (answer, error) {
			v, err := r.ValidateSettlementInputCurrent(ctx, req)
			if err != nil {
				return answer{}, err
			}
			if v.Conflict != nil {
				return answer{Answer: string(ownerread.Conflicting), ConflictBody: v.ConflictBody}, nil
			}
			return answer{Answer: string(ownerread.Found), Body: v.Body, Current: &v.Current}, nil
		})
	}
	return out
}
