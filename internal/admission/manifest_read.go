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
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// manifestAudiences are the workload audiences the manifest read serves: a
// purpose outside this set is refused, not answered.
var manifestAudiences = map[string]bool{
	execution.AudienceRunExecutionState:      true,
	coreread.AudienceMeteringSettlementInput: true,
}

// validateManifestRead refuses a request that is not exact before anything
// is read.
func validateManifestRead(r coreread.RunAdmissionManifestRead) error {
	switch {
	case r.ContractVersion != coreread.ReadRunAdmissionManifestV1:
		return fmt.Errorf("%w: contract version %q (want %s)", ownerread.ErrInvalidRequest, r.ContractVersion, coreread.ReadRunAdmissionManifestV1)
	case !manifestAudiences[r.Audience]:
		return fmt.Errorf("%w: audience %q is not served by %s", ownerread.ErrInvalidRequest, r.Audience, coreread.ReadRunAdmissionManifestV1)
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

// ReadRunAdmissionManifest answers readRunAdmissionManifest@1 from the core
// database: found (the manifest stored under the ref belongs to the run,
// decodes strictly, its digest recomputes and its quadruple, tenant and run
// equal the request), not_found (neither the ref nor a manifest of the run
// exists) or conflicting (anything else, with the reason). An invalid
// request is ownerread.ErrInvalidRequest and reads nothing.
func ReadRunAdmissionManifest(ctx context.Context, q db.Executor, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	if err := validateManifestRead(req); err != nil {
		return coreread.ManifestResult{}, err
	}
	rows, err := queries.ManifestReadCandidates(ctx, q, dbsqlc.ManifestReadCandidatesParams{
		RunAdmissionManifestRef: req.Manifest.Ref, RunID: req.RunID,
	})
	if err != nil {
		return coreread.ManifestResult{}, fmt.Errorf("read run admission manifest: %w", err)
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
func compareManifest(req coreread.RunAdmissionManifestRead, body []byte) coreread.ManifestResult {
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
