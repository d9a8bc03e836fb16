package ownerhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/workload"
)

// fakeGateway answers the dispatch slot read and counts the calls that
// reached it (a refused call must not).
type fakeGateway struct {
	gatewayread.Reader
	calls  atomic.Int64
	answer func(req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error)
}

func (f *fakeGateway) ReadDispatchSlot(_ context.Context, req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
	f.calls.Add(1)
	return f.answer(req)
}

type env struct {
	gw      *fakeGateway
	srv     *httptest.Server
	signer  *workload.Signer // owner.execution: the dispatch slot's caller
	gateway *workload.Signer // owner.gateway: trusted, but not a caller of that read
	client  *ownerhttp.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: "owner.execution", Key: priv})
	require.NoError(t, err)
	gwPriv, gwPub, err := workload.Generate()
	require.NoError(t, err)
	e := &env{}
	e.gateway, err = workload.NewSigner(workload.SignerConfig{Workload: "owner.gateway", Key: gwPriv})
	require.NoError(t, err)
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: ownerhttp.Audience(ownerhttp.OwnerGateway),
		Trusted: []workload.Trusted{{Workload: "owner.execution", Key: pub}, {Workload: "owner.gateway", Key: gwPub}}})
	require.NoError(t, err)
	e.gw, e.signer = &fakeGateway{answer: func(gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
		return ownerread.FoundWith(gatewayread.DispatchSlot{State: gatewayread.SlotTerminalRejected, RejectionReasonCode: "capacity",
			RejectionBody: []byte(`{"x":1}`)}, nil), nil
	}}, signer
	h, err := ownerhttp.Handler(ownerhttp.ServerConfig{Served: ownerhttp.Served{Gateway: e.gw},
		Verifiers: map[string]*workload.Verifier{ownerhttp.OwnerGateway: v}})
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	e.client, err = ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: ownerhttp.OwnerGateway, BaseURL: e.srv.URL, Signer: signer})
	require.NoError(t, err)
	t.Cleanup(e.client.Close)
	return e
}

var slotRead = gatewayread.DispatchSlotRead{ContractVersion: gatewayread.ReadDispatchSlotV1, Audience: gatewayread.AudienceExecutionEligibility,
	ExecutionAttemptID: "0193a000-0000-7000-8000-000000000001", GatewayDeploymentID: "gw-eu-1"}

// The answer crosses intact: state, reason code and the rejection's bytes.
func TestOwnerReadAnswerCrossesIntact(t *testing.T) {
	t.Parallel()
	e := setup(t)
	got, err := e.client.Gateway().ReadDispatchSlot(t.Context(), slotRead)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, got.Answer)
	require.Equal(t, gatewayread.SlotTerminalRejected, got.Value.State)
	require.Equal(t, []byte(`{"x":1}`), got.Value.RejectionBody)
	require.EqualValues(t, 1, e.gw.calls.Load())
}

// post sends body to read with token and returns the status and body.
func post(t *testing.T, e *env, read, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.URL+ownerhttp.PathPrefix+read, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// WORKLOAD.scope / WORKLOAD.audience (issue 34): a token scoped to one read
// is refused by another, a token for another owner's audience, a replayed
// or a missing token are refused, a trusted workload of an owner the read
// does not serve is refused (ownerhttp.Callers), and none of them reaches
// the owner.
func TestOwnerReadRefusesATokenForAnotherRead(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const body = `{"ContractVersion":"readDispatchSlot@1"}`
	otherRead, err := e.signer.Sign(ownerhttp.Audience(ownerhttp.OwnerGateway), ownerhttp.Scope(gatewayread.ReadAvailabilitySnapshotV1))
	require.NoError(t, err)
	otherOwner, err := e.signer.Sign(ownerhttp.Audience(ownerhttp.OwnerExecution), ownerhttp.Scope(gatewayread.ReadDispatchSlotV1))
	require.NoError(t, err)
	good, err := e.signer.Sign(ownerhttp.Audience(ownerhttp.OwnerGateway), ownerhttp.Scope(gatewayread.ReadDispatchSlotV1))
	require.NoError(t, err)
	for name, token := range map[string]string{"another read's scope": otherRead, "another owner's audience": otherOwner, "missing": ""} {
		status, answer := post(t, e, gatewayread.ReadDispatchSlotV1, token, body)
		require.Equal(t, http.StatusUnauthorized, status, name)
		require.Contains(t, answer, ownerhttp.CodeUnauthorized, name)
	}
	// A trusted workload of another owner holds a valid token for the
	// read, but readDispatchSlot@1 serves Execution only.
	notCaller, err := e.gateway.Sign(ownerhttp.Audience(ownerhttp.OwnerGateway), ownerhttp.Scope(gatewayread.ReadDispatchSlotV1))
	require.NoError(t, err)
	status, answer := post(t, e, gatewayread.ReadDispatchSlotV1, notCaller, body)
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, answer, ownerhttp.CodeForbidden)
	status, _ = post(t, e, gatewayread.ReadDispatchSlotV1, good, body)
	require.Equal(t, http.StatusOK, status)
	status, answer = post(t, e, gatewayread.ReadDispatchSlotV1, good, body)
	require.Equal(t, http.StatusUnauthorized, status, "replayed")
	require.Contains(t, answer, "replayed")
	require.EqualValues(t, 1, e.gw.calls.Load(), "only the one good call reached the owner")
}

// Strict decoding: an unknown field, trailing data or a read this endpoint
// does not serve is refused before the owner is called; the client sees
// ownerread.ErrInvalidRequest for a request the owner refuses.
func TestOwnerReadDecodesStrictly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sign := func(read string) string {
		tok, err := e.signer.Sign(ownerhttp.Audience(ownerhttp.OwnerGateway), ownerhttp.Scope(read))
		require.NoError(t, err)
		return tok
	}
	for name, body := range map[string]string{
		"unknown field":    `{"ContractVersion":"readDispatchSlot@1","Latest":true}`,
		"trailing data":    `{"ContractVersion":"readDispatchSlot@1"} {}`,
		"trailing bracket": `{"ContractVersion":"readDispatchSlot@1"}]`,
		"lower-case key":   `{"contractversion":"readDispatchSlot@1"}`,
		"key twice":        `{"ContractVersion":"readDispatchSlot@1","ContractVersion":"readDispatchSlot@2"}`,
		"nested unknown":   `{"AttemptManifest":{"Ref":"m","Latest":true}}`,
		"null":             `null`,
		"not json":         `readDispatchSlot`,
	} {
		status, answer := post(t, e, gatewayread.ReadDispatchSlotV1, sign(gatewayread.ReadDispatchSlotV1), body)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Contains(t, answer, ownerhttp.CodeBadRequest, name)
	}
	status, _ := post(t, e, "readEverything@1", sign("readEverything@1"), `{}`)
	require.Equal(t, http.StatusNotFound, status)
	require.Zero(t, e.gw.calls.Load(), "nothing reached the owner")

	e.gw.answer = func(gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
		return gatewayread.SlotResult{}, ownerread.ErrInvalidRequest
	}
	_, err := e.client.Gateway().ReadDispatchSlot(t.Context(), slotRead)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
	require.NotErrorIs(t, err, ownerhttp.ErrUnavailable, "the owner refused the request: not retried as an outage")
}

// CON-2: a request the wire refused (the endpoint could not decode it: a
// caller of another version during a rolling upgrade) is not the event's
// fault: the client sees ErrUnavailable and retries, never
// ownerread.ErrInvalidRequest (which a caller turns into a quarantine or a
// conflict fact).
func TestOwnerReadWireRefusalIsRetryable(t *testing.T) {
	t.Parallel()
	priv, _, err := workload.Generate()
	require.NoError(t, err)
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: "metering.input", Key: priv})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"code":"bad_request","message":"request: unknown field \"Purpose\""}`))
	}))
	defer srv.Close()
	c, err := ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: ownerhttp.OwnerGateway, BaseURL: srv.URL, Signer: signer})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Gateway().ReadDispatchSlot(t.Context(), slotRead)
	require.ErrorIs(t, err, ownerhttp.ErrUnavailable)
	require.NotErrorIs(t, err, ownerread.ErrInvalidRequest)
}

// CON-2: an owner that cannot answer (its database down, the process gone)
// is ErrUnavailable to the caller, never an answer; a found answer whose
// body does not decode is never trusted.
func TestOwnerReadUnavailableIsNeverAnAnswer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.gw.answer = func(gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
		return gatewayread.SlotResult{}, errors.New("connection refused")
	}
	_, err := e.client.Gateway().ReadDispatchSlot(t.Context(), slotRead)
	require.ErrorIs(t, err, ownerhttp.ErrUnavailable)
	var herr *ownerhttp.Error
	require.ErrorAs(t, err, &herr)
	require.Equal(t, http.StatusServiceUnavailable, herr.Status)

	e.srv.Close()
	_, err = e.client.Gateway().ReadDispatchSlot(t.Context(), slotRead)
	require.ErrorIs(t, err, ownerhttp.ErrUnavailable, "the owner process is gone")
}

// A found answer is decoded from its body with the contract's strict
// decoder: bytes that are not the object are refused (ErrBadAnswer), so a
// broken or hostile endpoint cannot hand the caller a value it did not sign
// for.
func TestOwnerReadRefusesAFoundBodyThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	priv, _, err := workload.Generate()
	require.NoError(t, err)
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: "metering.input", Key: priv})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"answer":"found","body":"eyJub3QiOiJhIGZhY3QifQ=="}`))
	}))
	defer srv.Close()
	c, err := ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: ownerhttp.OwnerExecution, BaseURL: srv.URL, Signer: signer})
	require.NoError(t, err)
	_, err = c.Execution().ReadEligibilityFact(t.Context(), executionread.EligibilityFactRead{ContractVersion: executionread.ReadEligibilityFactV1})
	require.ErrorIs(t, err, ownerhttp.ErrBadAnswer)
	require.ErrorIs(t, err, ownerhttp.ErrUnavailable)
}

// Issue 34, CON-2: the owner's endpoint dies while a read is in flight (the
// owner has already stored its answer, as an operation-bound validation
// does): the caller gets ErrUnavailable, never an answer, and its retry
// against the restarted endpoint gets the owner's first answer.
func TestOwnerReadKilledMidReadConverges(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inRead, release := make(chan struct{}), make(chan struct{})
	var stored atomic.Pointer[gatewayread.DispatchSlot]
	e.gw.answer = func(gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
		if s := stored.Load(); s != nil {
			return ownerread.FoundWith(*s, nil), nil // the stored first answer
		}
		first := gatewayread.DispatchSlot{State: gatewayread.SlotTerminalRejected, RejectionReasonCode: "first", RejectionBody: []byte(`{"n":1}`)}
		stored.Store(&first)
		close(inRead)
		<-release
		return ownerread.FoundWith(first, nil), nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.client.Gateway().ReadDispatchSlot(t.Context(), slotRead)
		done <- err
	}()
	<-inRead
	e.srv.CloseClientConnections() // the owner process is gone mid-read
	err := <-done
	require.ErrorIs(t, err, ownerhttp.ErrUnavailable)
	close(release)

	got, err := e.client.Gateway().ReadDispatchSlot(t.Context(), slotRead)
	require.NoError(t, err)
	require.Equal(t, "first", got.Value.RejectionReasonCode)
	require.Equal(t, []byte(`{"n":1}`), got.Value.RejectionBody)
}

// A found answer must be the object asked for: an endpoint answering a
// valid, digest-correct attempt manifest of another attempt (misrouted, or
// not the owner at all) is refused as ErrBadAnswer, never handed over.
func TestOwnerReadRefusesAnotherObjectThanAsked(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("../../../contracts/execution/testdata/golden/AttemptExecutionManifest@1/first_attempt/canonical.json")
	require.NoError(t, err)
	m, err := contract.DecodeAttemptExecutionManifest(body)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"answer": "found", "body": body})
	}))
	defer srv.Close()
	priv, _, err := workload.Generate()
	require.NoError(t, err)
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: "owner.metering", Key: priv})
	require.NoError(t, err)
	c, err := ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: ownerhttp.OwnerExecution, BaseURL: srv.URL, Signer: signer})
	require.NoError(t, err)
	defer c.Close()
	req := executionread.AttemptManifestRead{ContractVersion: executionread.ReadAttemptManifestV1, Audience: executionread.AudienceMeteringInput,
		ExecutionAttemptID: m.ExecutionAttemptID, AttemptManifest: m.Manifest}
	got, err := c.Execution().ReadAttemptManifest(t.Context(), req)
	require.NoError(t, err, "the object asked for")
	require.Equal(t, body, got.Body)
	other := req
	other.AttemptManifest.Ref = "aem-another"
	_, err = c.Execution().ReadAttemptManifest(t.Context(), other)
	require.ErrorIs(t, err, ownerhttp.ErrBadAnswer)
}
