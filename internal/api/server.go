package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"go.yaml.in/yaml/v3"

	apidoc "github.com/oceanway/core/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/workload"
)

// PublicOperations are the operations a public caller may call: admit a
// run (while PUBLIC_ADMISSION_MODE allows it) and read what it admitted.
var PublicOperations = map[string]bool{"admitRun": true, "getRun": true, "getReservation": true}

// Scope is the token scope of one operation.
func Scope(operationID string) string { return "api:" + operationID }

// Config configures Handler: the owners this process serves, each with
// its operations, its callers' verifier and its key store. An owner left
// nil is not served here (its operations answer 404
// operation_not_served_here).
type Config struct {
	Core      CoreOperations
	Execution ExecutionOperations
	Gateway   GatewayOperations
	Metering  MeteringOperations
	Cases     CaseOperations
	// PublicCallers are the workloads that call on behalf of the public
	// (PUBLIC_ADMISSION_MODE's callers): they may call PublicOperations
	// only, whatever scope their token names.
	PublicCallers map[string]bool
	// Served holds, for every owner above, its verifier and key store.
	Served map[Owner]Served
	Log    *slog.Logger
}

// Handler serves the API: /v1/... (validated, authenticated, idempotent),
// GET /openapi.json and GET /docs.
func Handler(cfg Config) (http.Handler, error) {
	present := map[Owner]bool{OwnerCore: cfg.Core != nil, OwnerExecution: cfg.Execution != nil, OwnerGateway: cfg.Gateway != nil,
		OwnerMetering: cfg.Metering != nil, OwnerOperations: cfg.Cases != nil}
	n := 0
	for _, o := range Owners {
		sv, ok := cfg.Served[o]
		switch {
		case present[o] && (!ok || (sv.Verifier == nil) == (sv.Actors == nil) || (sv.Keys == nil) != (KeyTables[o] == "")):
			return nil, fmt.Errorf("api: owner %s needs one authenticator (workload verifier or actor authenticator) and (when it has mutating operations) its key store", o)
		case !present[o] && ok:
			return nil, fmt.Errorf("api: a verifier and key store for owner %s, whose operations are absent", o)
		case present[o]:
			if sv.Keys != nil {
				if err := sv.Keys.check(o); err != nil {
					return nil, err
				}
			}
			n++
		}
	}
	if n == 0 {
		return nil, errors.New("api: no owner's operations to serve")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	doc, err := LoadDocument()
	if err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("api: router: %w", err)
	}
	rawDoc, err := DocumentJSON()
	if err != nil {
		return nil, err
	}
	strict := apigen.NewStrictHandlerWithOptions(operations{core: cfg.Core, execution: cfg.Execution, gateway: cfg.Gateway, metering: cfg.Metering, cases: cfg.Cases}, nil, apigen.StrictHTTPServerOptions{
		// The document's validation ran first: a body the generated code
		// cannot bind is still the caller's.
		RequestErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, err error) {
			WriteProblem(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			var refused *Refusal
			if errors.As(err, &refused) {
				p := refused.Problem
				WriteProblem(w, p.Status, p.Code, deref(p.Detail))
				return
			}
			cfg.Log.Error("api: operation failed", "path", r.URL.Path, "err", err)
			WriteProblem(w, http.StatusServiceUnavailable, CodeUnavailable, "the operation could not complete; nothing was committed")
		},
	})
	ops := apigen.HandlerWithOptions(strict, apigen.StdHTTPServerOptions{
		ErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, err error) {
			WriteProblem(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		},
	})
	s := &server{cfg: cfg, router: router}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(rawDoc)
	})
	mux.Handle("GET /docs", docsPage(doc))
	mux.Handle("/v1/", s.routed(s.authenticated(s.validated(s.idempotent(ops)))))
	return mux, nil
}

// LoadDocument parses the API document (api/openapi.yaml) and validates
// it; requests are matched by path whatever address serves them.
func LoadDocument() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Document)
	if err != nil {
		return nil, fmt.Errorf("api: document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("api: document: %w", err)
	}
	doc.Servers = nil
	return doc, nil
}

// DocumentJSON is the document as JSON, as GET /openapi.json serves it.
func DocumentJSON() ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(apidoc.Document, &v); err != nil {
		return nil, fmt.Errorf("api: document: %w", err)
	}
	return json.Marshal(v)
}

type server struct {
	cfg    Config
	router routers.Router
}

type ctxKey int

const (
	keyCall ctxKey = iota
	keyTx
)

// Call is what the conventions established about a request before the
// operation runs.
type Call struct {
	OperationID    string
	Owner          Owner  // the operation's tag
	Caller         string // the token's workload, or the operator's principal
	Assertion      string // the operator's actor assertion (Operations' operations only)
	route          *routers.Route
	params         map[string]string
	IdempotencyKey string // mutating operations only
}

// CallOf returns the request's Call (zero outside the API's handler).
func CallOf(ctx context.Context) Call {
	c, _ := ctx.Value(keyCall).(Call)
	return c
}

// routed matches the request to its operation (and refuses another
// owner's) before anything else runs.
func (s *server) routed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, err := s.router.FindRoute(r)
		switch {
		case errors.Is(err, routers.ErrMethodNotAllowed):
			WriteProblem(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" "+r.URL.Path)
			return
		case err != nil:
			WriteProblem(w, http.StatusNotFound, CodeNotFound, "no operation at "+r.URL.Path)
			return
		}
		call := Call{OperationID: route.Operation.OperationID, Owner: ownerOf(route.Operation), route: route, params: params}
		if _, ok := s.cfg.Served[call.Owner]; !ok {
			WriteProblem(w, http.StatusNotFound, CodeNotServedHere,
				fmt.Sprintf("%s is a %s operation; this process does not serve the %s owner", call.OperationID, call.Owner, call.Owner))
			return
		}
		if mutating(route.Operation) {
			call.IdempotencyKey = r.Header.Get("Idempotency-Key")
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCall, call)))
	})
}

// validated validates the authenticated request against the document
// (parameters, headers, the body's schema) before the operation runs: a
// caller learns nothing of the document's rules without a valid token.
func (s *server) validated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := CallOf(r.Context())
		if r.ContentLength > maxBody {
			WriteProblem(w, http.StatusBadRequest, CodeInvalidRequest, "request body too large")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		in := &openapi3filter.RequestValidationInput{Request: r, PathParams: call.params, Route: call.route,
			// The token was verified before, for the operation's own scope.
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false}}
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			WriteProblem(w, http.StatusBadRequest, CodeInvalidRequest, validationDetail(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ownerOf is the operation's owner: its one tag.
func ownerOf(op *openapi3.Operation) Owner {
	if len(op.Tags) != 1 {
		return ""
	}
	return Owner(op.Tags[0])
}

// maxBody bounds a request body.
const maxBody = 1 << 20

// mutating reports whether op takes an Idempotency-Key.
func mutating(op *openapi3.Operation) bool {
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInHeader && strings.EqualFold(p.Value.Name, "Idempotency-Key") {
			return true
		}
	}
	return false
}

// validationDetail is the first line of a validation error: which
// parameter or field, and why.
func validationDetail(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// authenticated verifies the workload token for the operation's scope.
func (s *server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := CallOf(r.Context())
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			token = ""
		}
		if actors := s.cfg.Served[call.Owner].Actors; actors != nil {
			principal, err := actors.AuthenticateActor(token)
			if err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="oceanway-operators"`)
				WriteProblem(w, http.StatusUnauthorized, CodeUnauthorized, err.Error())
				return
			}
			call.Caller, call.Assertion = principal, token
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCall, call)))
			return
		}
		claims, err := s.cfg.Served[call.Owner].Verifier.Verify(token, Scope(call.OperationID))
		switch {
		case errors.Is(err, workload.ErrScope):
			WriteProblem(w, http.StatusForbidden, CodeForbidden, err.Error())
			return
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="oceanway"`)
			WriteProblem(w, http.StatusUnauthorized, CodeUnauthorized, err.Error())
			return
		}
		call.Caller = claims.Subject
		if s.cfg.PublicCallers[call.Caller] && !PublicOperations[call.OperationID] {
			WriteProblem(w, http.StatusForbidden, CodeForbidden, call.Caller+" is a public caller: "+call.OperationID+" is not one of its operations")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCall, call)))
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
