package ownerhttp_test

import (
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

// No client connection, server or handler goroutine outlives the tests.
func TestMain(m *testing.M) { dbtest.Main(m) }
