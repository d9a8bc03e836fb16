package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission/dbsqlc"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
)

// ReadRunAdmissionManifestV1 is the contract version of Core's manifest read.
const ReadRunAdmissionManifestV1 = "readRunAdmissionManifest@1"

// manifestAudiences are the workload audiences the manifest read serves: a
// purpose outside this set is refused, not answered.
var manifestAudiences = map[string]bool{
	execution.AudienceRunExecutionState: true,
	AudienceMeteringSettlementInput:     true,
}

// AudienceMeteringSettlementInput is the Metering worker's purpose: the
// settlement input's economic identity is the one the manifest froze.
const AudienceMeteringSettlementInput = "metering_settlement_input"

// RunAdmissionManifestRead is the request of readRunAdmissionManifest@1
// (ADR-031: exact workload audience, tenant, run, schema, algorithm; no bare
// ref, no "latest", no list). Every field is required except ProjectID,
// which must equal the manifest's (empty when the run has no project).
type RunAdmissionManifestRead struct {
	ContractVersion string
	Audience        string
	Tenant          execution.Tenant
	RunID           string
	Manifest        strict.Quadruple
}

func (r RunAdmissionManifestRead) validate() error {
	switch {
	case r.ContractVersion != ReadRunAdmissionManifestV1:
		return fmt.Errorf("%w: contract version %q (want %s)", ownerread.ErrInvalidRequest, r.ContractVersion, ReadRunAdmissionManifestV1)
	case !manifestAudiences[r.Audience]:
		return fmt.Errorf("%w: audience %q is not served by %s", ownerread.ErrInvalidRequest, r.Audience, ReadRunAdmissionManifestV1)
	case r.Tenant.Kind == "" || !strict.IsUUID(r.Tenant.TenantID) || !strict.IsUUID(r.Tenant.WorkspaceID) ||
		(r.Tenant.ProjectID != "" && !strict.IsUUID(r.Tenant.ProjectID)):
		return fmt.Errorf("%w: tenant is incomplete", ownerread.ErrInvalidRequest)
	case !strict.IsUUID(r.RunID):
		return fmt.Errorf("%w: run id %q", ownerread.ErrInvalidRequest, r.RunID)
	}
	if err := r.Manifest.Validate(); err != nil {
		return fmt.Errorf("%w: manifest quadruple (a bare ref is refused): %w", ownerread.ErrInvalidRequest, err)
	}
	return nil
}

// ManifestResult is the answer of readRunAdmissionManifest@1.
type ManifestResult = ownerread.Result[*execution.RunAdmissionManifest]

// ReadRunAdmissionManifest answers readRunAdmissionManifest@1 from the core
// database: found (the manifest stored under the ref belongs to the run,
// decodes strictly, its digest recomputes and its quadruple, tenant and run
// equal the request), not_found (neither the ref nor a manifest of the run
// exists) or conflicting (anything else, with the reason). An invalid
// request is ownerread.ErrInvalidRequest and reads nothing.
func ReadRunAdmissionManifest(ctx context.Context, q db.Executor, req RunAdmissionManifestRead) (ManifestResult, error) {
	if err := req.validate(); err != nil {
		return ManifestResult{}, err
	}
	rows, err := queries.ManifestReadCandidates(ctx, q, dbsqlc.ManifestReadCandidatesParams{
		RunAdmissionManifestRef: req.Manifest.Ref, RunID: req.RunID,
	})
	if err != nil {
		return ManifestResult{}, fmt.Errorf("read run admission manifest: %w", err)
	}
	var byRef, byRun *dbsqlc.ManifestReadCandidatesRow
	for i := range rows {
		if rows[i].RunAdmissionManifestRef == req.Manifest.Ref {
			byRef = &rows[i]
		}
		if rows[i].RunID == req.RunID {
			byRun = &rows[i]
		}
	}
	switch {
	case byRef == nil && byRun == nil:
		return ownerread.Missing[*execution.RunAdmissionManifest](), nil
	case byRef == nil:
		return ownerread.Conflict[*execution.RunAdmissionManifest]("the run was admitted with another manifest ref"), nil
	case byRef.RunID != req.RunID:
		return ownerread.Conflict[*execution.RunAdmissionManifest]("the manifest ref belongs to another run"), nil
	}
	return compareManifest(req, []byte(byRef.ManifestBody)), nil
}

// compareManifest decodes the stored body strictly (its digest recomputes)
// and compares every field the request states.
func compareManifest(req RunAdmissionManifestRead, body []byte) ManifestResult {
	conflict := ownerread.Conflict[*execution.RunAdmissionManifest]
	m, err := execution.DecodeRunAdmissionManifest(body)
	if err != nil {
		return conflict("stored manifest does not decode or its digest does not recompute: " + err.Error())
	}
	switch {
	case m.Manifest != req.Manifest:
		return conflict(fmt.Sprintf("stored quadruple %s/%s/%s/%s differs from the request", m.Manifest.Ref, m.Manifest.SchemaVersion, m.Manifest.DigestAlgorithmVersion, m.Manifest.Digest))
	case m.RunID != req.RunID:
		return conflict("manifest run differs")
	case m.Tenant != req.Tenant:
		return conflict("manifest tenant differs")
	}
	return ownerread.FoundWith(m, body)
}

// ErrRunNotAdmitted: no admitted run with that id.
var ErrRunNotAdmitted = errors.New("admission: run not admitted")

// IssueRunExecutionToken builds Core's RunExecutionToken@1 for an admitted
// run from its stored manifest (never from the caller's values): the token
// carries the manifest quadruple, tenant, account, reservation and run,
// sealed under ref at issuedAt. The token is a derivable permission, not a
// stored fact: the Execution owner verifies it against readRunAdmissionManifest
// and stores the exact token it accepted.
func IssueRunExecutionToken(ctx context.Context, q db.Executor, runID, ref string, issuedAt time.Time) (*execution.RunExecutionToken, []byte, error) {
	if !strict.IsUUID(runID) {
		return nil, nil, fmt.Errorf("issue run execution token: %w: run id %q", ErrRunNotAdmitted, runID)
	}
	rows, err := queries.ManifestReadCandidates(ctx, q, dbsqlc.ManifestReadCandidatesParams{RunID: runID})
	if err != nil {
		return nil, nil, fmt.Errorf("issue run execution token: %w", err)
	}
	for _, r := range rows {
		if r.RunID != runID {
			continue
		}
		m, err := execution.DecodeRunAdmissionManifest([]byte(r.ManifestBody))
		if err != nil {
			return nil, nil, fmt.Errorf("issue run execution token: stored manifest: %w", err)
		}
		tok := execution.TokenFor(m, ref, issuedAt.UTC().Truncate(time.Microsecond))
		body, err := execution.Seal(tok)
		if err != nil {
			return nil, nil, fmt.Errorf("issue run execution token: %w", err)
		}
		return tok, body, nil
	}
	return nil, nil, fmt.Errorf("issue run execution token: %w: %s", ErrRunNotAdmitted, runID)
}
