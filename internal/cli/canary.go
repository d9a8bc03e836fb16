package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/apiclient"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/workload"
)

// The canary's one Organization's text Offering on one fixed Gateway path.
const (
	canaryGateway  = "gw-canary"
	canaryModel    = "model-deploy/canary-text"
	canaryReserved = 500
)

var canaryRoute = apiclient.Route{ChannelId: "channel-canary", SupplyId: "supply-canary", CredentialVersion: 1,
	ProviderModel: "canary-text-1", AdapterId: "adapter-canary"}

// canaryObservations are the provider's reports of the canary's one text
// attempt: its two usage dimensions and its cost, available at once.
var canaryObservations = []apiclient.ObservationRequest{
	{EvidenceKind: apiclient.ProviderUsage, DimensionKey: "text.input_tokens", State: apiclient.Available},
	{EvidenceKind: apiclient.ProviderUsage, DimensionKey: "text.output_tokens", State: apiclient.Available},
	{EvidenceKind: apiclient.ProviderCost, DimensionKey: "cost.usd_micros", State: apiclient.Available},
}

var canaryQuantities = []string{"120", "80", "1500"}

func newCanaryCmd(streams *IO) *cobra.Command {
	var apiURL, keys string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "canary",
		Short: "Drive one run through the public API only and record this deployment's canary proof",
		Long: `canary drives one run through the platform API at --api and nothing else (no database
access), as the platform workload of --keys (D/platform.key): one Organization, one text
Offering, one fixed Gateway path. It admits, issues the run's token, opens the run, creates
one attempt, dispatches it, reports the provider's evidence, finalizes its eligibility and
closes the run, checking every answer against what it sent and every returned fact against its
content address; once the reservation finalized it checks the settlement inputs Metering formed;
then Core checks the whole loop closed from its own facts (the run admitted through the API by
this caller, finalization with usage settled, settled + released = reserved, the committed
finalization recomputing, the Operations projection, completeness verified_current) and records
the content-addressed canary proof (recordCanaryProof). It prints a verdict and exits non-zero on any
mismatch, failed check or timeout. serve --public-admission-mode enabled needs a passed proof.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if apiURL == "" || keys == "" {
				return errors.New("canary: --api and --keys are required")
			}
			keyPath, err := keysDir{dir: keys}.private(keyPlatform)
			if err != nil {
				return err
			}
			key, err := workload.LoadPrivateKey(keyPath)
			if err != nil {
				return err
			}
			signer, err := workload.NewSigner(workload.SignerConfig{Workload: keyPlatform, Key: key})
			if err != nil {
				return err
			}
			c, err := apiclient.NewClientWithResponses(apiURL, apiclient.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			cn := &canary{c: c, signer: signer, out: streams.Out}
			proof, err := cn.run(ctx)
			if err != nil {
				fmt.Fprintf(streams.Out, "canary: FAILED: %v\n", err)
				return fmt.Errorf("canary: %w", err)
			}
			for _, ch := range proof.Checks {
				fmt.Fprintf(streams.Out, "canary: check %-44s %v  %s\n", ch.Name, ch.Ok, ch.Detail)
			}
			fmt.Fprintf(streams.Out, "canary: proof %s recorded\n", proof.Proof.Ref)
			if proof.Verdict != apiclient.Passed {
				fmt.Fprintln(streams.Out, "canary: verdict FAILED")
				return errors.New("canary: Core recorded a failed proof")
			}
			fmt.Fprintln(streams.Out, "canary: verdict PASSED")
			return nil
		},
	}
	cmd.Flags().StringVar(&apiURL, "api", "", "the platform API's base URL (serve --listen), e.g. http://127.0.0.1:8088")
	cmd.Flags().StringVar(&keys, "keys", "", "the keys directory (oceanway keys generate): the canary signs as its platform workload")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "give up (and fail) after this long")
	return cmd
}

type canary struct {
	c      *apiclient.ClientWithResponses
	signer *workload.Signer
	out    io.Writer
}

func (cn *canary) bearer(o api.Owner, op string) apiclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		tok, err := cn.signer.Sign(api.Audience(o), api.Scope(op))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
}

func (cn *canary) step(format string, args ...any) {
	fmt.Fprintf(cn.out, "canary: "+format+"\n", args...)
}

// answer fails unless the call succeeded with want.
func answer(op string, err error, status int, want int, body []byte) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if status != want {
		return fmt.Errorf("%s: answered %d, want %d: %s", op, status, want, body)
	}
	return nil
}

// mismatch is a check of an answer against what the canary sent.
func mismatch(what string, got, want any) error {
	return fmt.Errorf("%s: got %v, want %v", what, got, want)
}

func (cn *canary) run(ctx context.Context) (*apiclient.CanaryProof, error) {
	org, ws, account := uuid.New(), uuid.New(), uuid.New()
	key := "canary-" + uuid.NewString() // this canary's keys: fresh per run

	// Core: admit, read back, issue the token.
	adm, err := cn.c.AdmitRunWithResponse(ctx, &apiclient.AdmitRunParams{IdempotencyKey: key + "-admit"},
		apiclient.AdmitRunRequest{OrganizationId: org, WorkspaceId: ws, BillingAccountId: account, ReservedCredits: canaryReserved},
		cn.bearer(api.OwnerCore, "admitRun"))
	if err := answer("admitRun", err, adm.StatusCode(), http.StatusCreated, adm.Body); err != nil {
		return nil, err
	}
	run := adm.JSON201
	if run.BillingAccountId != account || run.ReservedCredits != canaryReserved {
		return nil, mismatch("admitRun account, credits", []any{run.BillingAccountId, run.ReservedCredits}, []any{account, canaryReserved})
	}
	cn.step("admitted run %s, reservation %s (%d credits)", run.RunId, run.BillingReservationId, run.ReservedCredits)
	got, err := cn.c.GetRunWithResponse(ctx, run.RunId, cn.bearer(api.OwnerCore, "getRun"))
	if err := answer("getRun", err, got.StatusCode(), http.StatusOK, got.Body); err != nil {
		return nil, err
	}
	if *got.JSON200 != *run {
		return nil, mismatch("getRun", *got.JSON200, *run)
	}
	tok, err := cn.c.IssueRunExecutionTokenWithResponse(ctx, run.RunId, &apiclient.IssueRunExecutionTokenParams{IdempotencyKey: key + "-token"},
		cn.bearer(api.OwnerCore, "issueRunExecutionToken"))
	if err := answer("issueRunExecutionToken", err, tok.StatusCode(), http.StatusCreated, tok.Body); err != nil {
		return nil, err
	}
	t, err := contract.DecodeRunExecutionToken([]byte(tok.JSON201.TokenBody))
	switch {
	case err != nil:
		return nil, fmt.Errorf("issueRunExecutionToken: the token body: %w", err)
	case t.RunID != run.RunId.String() || t.BillingReservationID != run.BillingReservationId.String() || t.Manifest.Digest != run.Manifest.Digest ||
		t.Token.Digest != tok.JSON201.RunExecutionToken.Digest:
		return nil, mismatch("the run execution token", t, run)
	}
	cn.step("Core issued the run's signed execution token %s", t.Token.Ref)

	// Execution: open the run, create the attempt.
	open, err := cn.c.OpenRunWithResponse(ctx, &apiclient.OpenRunParams{IdempotencyKey: key + "-open"}, apiclient.OpenRunRequest{Token: tok.JSON201.Token},
		cn.bearer(api.OwnerExecution, "openRun"))
	if err := answer("openRun", err, open.StatusCode(), http.StatusCreated, open.Body); err != nil {
		return nil, err
	}
	if st := open.JSON201; st.RunId != run.RunId || st.Manifest != run.Manifest || st.RunExecutionToken != tok.JSON201.RunExecutionToken ||
		st.State != apiclient.AcceptingAttempts {
		return nil, mismatch("openRun", *st, run)
	}
	attemptID, stepID := uuid.New(), uuid.New()
	output := apiclient.Quadruple{Ref: "output-contract/canary-text@1", SchemaVersion: "1", DigestAlgorithmVersion: "jcs-sha256-v1",
		Digest: hex.EncodeToString(sha256Sum("output-contract/canary-text@1"))}
	att, err := cn.c.CreateAttemptWithResponse(ctx, run.RunId, &apiclient.CreateAttemptParams{IdempotencyKey: key + "-attempt"},
		apiclient.CreateAttemptRequest{RunStepId: stepID, ExecutionAttemptId: attemptID, ModelDeploymentId: canaryModel,
			GatewayDeploymentId: canaryGateway, RoutingPolicyRevision: 1, OutputContract: output}, cn.bearer(api.OwnerExecution, "createAttempt"))
	if err := answer("createAttempt", err, att.StatusCode(), http.StatusCreated, att.Body); err != nil {
		return nil, err
	}
	m, err := contract.DecodeAttemptExecutionManifest([]byte(att.JSON201.ManifestBody))
	switch {
	case err != nil:
		return nil, fmt.Errorf("createAttempt: the manifest body: %w", err)
	case m.ExecutionAttemptID != attemptID.String() || m.RunID != run.RunId.String() || m.GatewayDeploymentID != canaryGateway ||
		m.Manifest.Digest != att.JSON201.Manifest.Digest:
		return nil, mismatch("the attempt manifest", m, attemptID)
	}
	cn.step("opened the run; attempt %s on %s", attemptID, canaryGateway)

	// Gateway: dispatch on the fixed route, report the provider's evidence.
	disp, err := cn.c.DispatchAttemptWithResponse(ctx, &apiclient.DispatchAttemptParams{IdempotencyKey: key + "-dispatch"},
		apiclient.DispatchRequest{OrganizationId: org, WorkspaceId: ws, AttemptManifestBody: att.JSON201.ManifestBody, Route: &canaryRoute},
		cn.bearer(api.OwnerGateway, "dispatchAttempt"))
	if err := answer("dispatchAttempt", err, disp.StatusCode(), http.StatusCreated, disp.Body); err != nil {
		return nil, err
	}
	if s := disp.JSON201; s.State != apiclient.Bound || s.Binding == nil || s.ExecutionAttemptId != attemptID {
		return nil, mismatch("dispatchAttempt", *s, "bound")
	}
	for i, o := range canaryObservations {
		o.Quantity, o.ReportId = &canaryQuantities[i], ptr("canary-r1")
		r, err := cn.c.ReportProviderObservationWithResponse(ctx, attemptID,
			&apiclient.ReportProviderObservationParams{IdempotencyKey: fmt.Sprintf("%s-observation-%d", key, i)}, o,
			cn.bearer(api.OwnerGateway, "reportProviderObservation"))
		if err := answer("reportProviderObservation", err, r.StatusCode(), http.StatusCreated, r.Body); err != nil {
			return nil, err
		}
		snap, err := contract.DecodeAvailabilitySnapshot([]byte(r.JSON201.SnapshotBody))
		switch {
		case err != nil:
			return nil, fmt.Errorf("reportProviderObservation: the snapshot body: %w", err)
		case snap.State != string(o.State) || snap.DimensionKey != o.DimensionKey || snap.ExecutionAttemptID != attemptID.String() ||
			snap.Snapshot.Digest != r.JSON201.AvailabilitySnapshot.Digest || r.JSON201.ProviderEvidence == nil ||
			snap.Evidence.Digest != r.JSON201.ProviderEvidence.Digest || *disp.JSON201.Binding != quadOfStrict(snap.Binding):
			return nil, mismatch("the availability snapshot of "+o.DimensionKey, snap, o)
		}
	}
	cn.step("bound to %s; reported %d available observations", canaryRoute.ProviderModel, len(canaryObservations))

	// Execution: eligibility, closure.
	el, err := cn.c.FinalizeAttemptEligibilityWithResponse(ctx, attemptID, &apiclient.FinalizeAttemptEligibilityParams{IdempotencyKey: key + "-eligibility"},
		apiclient.FinalizeEligibilityRequest{Disposition: apiclient.FinalizeEligibilityRequestDispositionDispatched},
		cn.bearer(api.OwnerExecution, "finalizeAttemptEligibility"))
	if err := answer("finalizeAttemptEligibility", err, el.StatusCode(), http.StatusCreated, el.Body); err != nil {
		return nil, err
	}
	if f, err := contract.DecodeExecutionEligibilityFact([]byte(el.JSON201.FactBody)); err != nil || f.Fact.Digest != el.JSON201.Fact.Digest ||
		f.Disposition != contract.DispositionDispatched {
		return nil, fmt.Errorf("finalizeAttemptEligibility: the fact does not match (%v)", err)
	}
	cl, err := cn.c.CloseRunWithResponse(ctx, run.RunId, &apiclient.CloseRunParams{IdempotencyKey: key + "-close"}, cn.bearer(api.OwnerExecution, "closeRun"))
	if err := answer("closeRun", err, cl.StatusCode(), http.StatusCreated, cl.Body); err != nil {
		return nil, err
	}
	set, err := contract.DecodeRunAttemptSetManifest([]byte(cl.JSON201.AttemptSetBody))
	if err != nil || set.Manifest.Digest != cl.JSON201.AttemptSet.Digest || len(set.Attempts) != 1 ||
		set.Attempts[0].ExecutionAttemptID != attemptID.String() {
		return nil, fmt.Errorf("closeRun: the attempt set does not hold exactly the canary's attempt (%v)", err)
	}
	if f, err := contract.DecodeRunExecutionFinalizationFact([]byte(cl.JSON201.FinalizationFactBody)); err != nil || f.Fact.Digest != cl.JSON201.FinalizationFact.Digest {
		return nil, fmt.Errorf("closeRun: the finalization fact does not recompute (%v)", err)
	}
	cn.step("eligibility dispatched; run closed (attempt set %s)", set.Manifest.Ref)

	// Wait for metering, finalization and the Operations projection.
	return cn.waitForProof(ctx, key, run, attemptID)
}

// checkSettlementInputs reads the settlement inputs Metering formed for the
// reservation (getReservationSettlementInputs): one per usage dimension the
// canary reported, each of its attempt and reservation, its body
// recomputing to its address.
func (cn *canary) checkSettlementInputs(ctx context.Context, run *apiclient.Run, attemptID uuid.UUID) error {
	r, err := cn.c.GetReservationSettlementInputsWithResponse(ctx, run.BillingReservationId, cn.bearer(api.OwnerMetering, "getReservationSettlementInputs"))
	if err := answer("getReservationSettlementInputs", err, r.StatusCode(), http.StatusOK, r.Body); err != nil {
		return err
	}
	var dims []string
	for _, in := range r.JSON200.Inputs {
		snap, err := settlement.Decode([]byte(in.SnapshotBody))
		switch {
		case err != nil:
			return fmt.Errorf("getReservationSettlementInputs: %s: %w", in.SettlementDimensionId, err)
		case snap.Snapshot.Digest != in.Snapshot.Digest || snap.ExecutionAttemptID != attemptID.String() ||
			snap.BillingReservationID != run.BillingReservationId.String() || in.ExecutionAttemptId != attemptID:
			return mismatch("the settlement input "+in.SettlementDimensionId.String(), snap, attemptID)
		}
		dims = append(dims, snap.ChargeDimensionKey)
	}
	var usage []string
	for _, o := range canaryObservations {
		if o.EvidenceKind == apiclient.ProviderUsage {
			usage = append(usage, o.DimensionKey)
		}
	}
	slices.Sort(dims)
	if !slices.Equal(dims, usage) {
		return mismatch("the reservation's settlement inputs by charge dimension", dims, usage)
	}
	cn.step("Metering formed %d settlement inputs (%v), each recomputing to its address", len(dims), dims)
	return nil
}

// waitForProof polls until Core records the proof (canary_not_settled:
// the loop has not closed yet), checking the reservation's answer.
func (cn *canary) waitForProof(ctx context.Context, key string, run *apiclient.Run, attemptID uuid.UUID) (*apiclient.CanaryProof, error) {
	last, inputsChecked := "", false
	for {
		res, err := cn.c.GetReservationWithResponse(ctx, run.BillingReservationId, cn.bearer(api.OwnerCore, "getReservation"))
		if err := answer("getReservation", err, res.StatusCode(), http.StatusOK, res.Body); err != nil {
			return nil, err
		}
		if r := res.JSON200; r.State != apiclient.Reserved {
			if r.RunId != run.RunId || r.BillingAccountId != run.BillingAccountId {
				return nil, mismatch("getReservation", *r, *run)
			}
			// Every check of the client's own passes before Core records a
			// proof: a proof once recorded is never taken back.
			if !inputsChecked {
				if err := cn.checkSettlementInputs(ctx, run, attemptID); err != nil {
					return nil, err
				}
				inputsChecked = true
			}
			rec, err := cn.c.RecordCanaryProofWithResponse(ctx, &apiclient.RecordCanaryProofParams{IdempotencyKey: key + "-proof"},
				apiclient.CanaryProofRequest{RunId: run.RunId, BillingReservationId: run.BillingReservationId}, cn.bearer(api.OwnerCore, "recordCanaryProof"))
			if err != nil {
				return nil, fmt.Errorf("recordCanaryProof: %w", err)
			}
			switch {
			case rec.StatusCode() == http.StatusCreated:
				p := rec.JSON201
				sum := sha256.Sum256([]byte(p.ProofBody))
				if hex.EncodeToString(sum[:]) != p.Proof.Digest {
					return nil, errors.New("recordCanaryProof: the proof body does not recompute to its digest")
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(p.ProofBody), &doc); err != nil || doc["runId"] != run.RunId.String() ||
					doc["billingReservationId"] != run.BillingReservationId.String() || doc["verdict"] != string(p.Verdict) {
					return nil, fmt.Errorf("recordCanaryProof: the proof names another run or verdict (%v)", err)
				}
				cn.step("reservation %s %s: settled %s, released %s of %s", run.BillingReservationId, r.State, deref(r.SettledAmount), deref(r.ReleasedAmount), r.ReservedAmount)
				return p, nil
			case rec.StatusCode() == http.StatusConflict && rec.ApplicationproblemJSON409 != nil && rec.ApplicationproblemJSON409.Code == api.CodeCanaryNotSettled:
				if d := deref(rec.ApplicationproblemJSON409.Detail); d != last {
					cn.step("waiting: %s", d)
					last = d
				}
			default:
				return nil, fmt.Errorf("recordCanaryProof: answered %d: %s", rec.StatusCode(), rec.Body)
			}
		} else if w := deref(r.Fence.WaitingReason); w != last && w != "" {
			cn.step("waiting for finalization: %s", w)
			last = w
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the loop did not close in time (last: %s): %w", last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func ptr[T any](v T) *T { return &v }

func sha256Sum(s string) []byte { sum := sha256.Sum256([]byte(s)); return sum[:] }

func quadOfStrict(q strict.Quadruple) apiclient.Quadruple {
	return apiclient.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: string(q.DigestAlgorithmVersion), Digest: q.Digest}
}
