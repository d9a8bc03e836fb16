package measure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The reference column divides every row by the reference system's
// throughput at the same tx size and variant, and is left out when the
// reference did not run (issue 17: a bar stated against River).
func TestWriteTable_ReferenceColumn(t *testing.T) {
	runs := []Run{
		{System: "oceanway", TxSize: 100, ConsumedPerSec: 2000},
		{System: "river", TxSize: 100, ConsumedPerSec: 8000},
		{System: "river + receipt", TxSize: 100, ConsumedPerSec: 3000},
		{System: "oceanway", TxSize: 1, ConsumedPerSec: 500},
		{System: "river", TxSize: 1, ConsumedPerSec: 1000},
		{System: "oceanway", TxSize: 100, Variant: "held-xmin", ConsumedPerSec: 1000},
	}
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, runs, TableOpts{Ours: "oceanway", Reference: "river"}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 1+len(runs))
	require.True(t, strings.HasSuffix(strings.TrimSpace(lines[0]), "vs ours  vs river"), lines[0])
	for i, want := range []string{"1.00×     0.25×", "4.00×     1.00×", "1.50×     0.38×", "1.00×     0.50×", "2.00×     1.00×", "1.00×         -"} {
		require.True(t, strings.HasSuffix(strings.TrimSpace(lines[1+i]), want), "row %d: %q", i, lines[1+i])
	}

	out.Reset()
	require.NoError(t, WriteTable(&out, runs[:1], TableOpts{Ours: "oceanway", Reference: "river"}))
	require.NotContains(t, out.String(), "vs river", "no reference run, no column")
}
