package integrity_test

import (
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

// TestMain stops a throwaway PostgreSQL cluster the harness started.
func TestMain(m *testing.M) { dbtest.Main(m) }
