package casesapi_test

import (
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }
