package httptransport_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No client connection, server or handler goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
