package admission

import (
	"context"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Reads answers Core's readRunAdmissionManifest@1 in process, over the core
// database: what the Execution owner and the Metering worker hold in a
// one-machine install.
type Reads struct{ DB db.Executor }

var _ coreread.ManifestReader = Reads{}

func (r Reads) ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	return ReadRunAdmissionManifest(ctx, r.DB, req)
}
