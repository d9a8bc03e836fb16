package reconciliation_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a goroutine outlives the tests. contracts/**
// may not import internal/dbtest, so it calls goleak directly.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
