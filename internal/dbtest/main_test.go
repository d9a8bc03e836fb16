package dbtest

import "testing"

// TestMain stops a throwaway PostgreSQL cluster the harness started.
func TestMain(m *testing.M) { Main(m) }
