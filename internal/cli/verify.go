package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/integrity"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/server"
)

// verifyOptions are the flags of `oceanway verify`.
type verifyOptions struct {
	conn             boundaryFlags
	asJSON           bool
	statementTimeout time.Duration
}

func newVerifyCmd(streams *IO) *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Re-verify the databases' stored facts against their digests and the billing ledger against its facts (read-only)",
		Long: `verify recomputes the content address of every stored content-addressed body of the
owner databases (core, execution, gateway, metering; see docs/integrity.md for the table
list) and compares it with the stored digest and ref; in core it re-derives the billing
ledger from its posting lines: every posting group balanced and equal to the fact that
justifies it (hold, committed finalization, refund transition), no derived balance
negative, every finalized reservation settled and released exactly as committed.

It prints one line per mismatch (database, table, the row's key, what does not match) and
a summary, or the report as JSON with --json. Exit status 0: everything matches; 1: a
mismatch, or a database could not be read. Each database is read in one READ ONLY,
REPEATABLE READ transaction; nothing is written.

Connection flags are those of "oceanway inspect": --database-url + --db-prefix (databases
<prefix>_core ... <prefix>_metering; missing ones are skipped) or --<boundary>-dsn.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVerify(cmd.Context(), streams, o)
		},
	}
	o.conn.register(cmd)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON (for scripts)")
	cmd.Flags().DurationVar(&o.statementTimeout, "statement-timeout", integrity.DefaultStatementTimeout, "bound of every read (one statement reads one table)")
	return cmd
}

func runVerify(ctx context.Context, streams *IO, o verifyOptions) error {
	pools, skipped, err := openVerifyPools(ctx, &o.conn)
	reportSkipped(streams.Err, skipped)
	if err != nil {
		return err
	}
	defer pools.Close()
	dbs := map[boundary.Boundary]db.TxBeginner{}
	for b, p := range pools {
		dbs[b] = p
	}
	rep, err := integrity.Verify(ctx, dbs, integrity.Config{StatementTimeout: o.statementTimeout})
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(streams.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
		return rep.Err()
	}
	for _, m := range rep.Mismatches {
		fmt.Fprintf(streams.Out, "MISMATCH %s\n", m)
	}
	for _, d := range rep.Databases {
		var rows int64
		for _, t := range d.Tables {
			rows += t.Rows
		}
		ledger := ""
		if d.Ledger {
			ledger = ", billing ledger"
		}
		fmt.Fprintf(streams.Out, "verify %-9s %3d tables, %7d rows%s: %d mismatch(es)\n", d.Database, len(d.Tables), rows, ledger, d.Mismatches)
	}
	if err := rep.Err(); err != nil {
		return err
	}
	fmt.Fprintln(streams.Out, "verify: every stored fact recomputes to its digest and the ledger matches its facts")
	return nil
}

// openVerifyPools connects one read-only pool per boundary database, like
// inspect: a database derived from --db-prefix that does not exist is
// skipped; one given its own DSN must answer.
func openVerifyPools(ctx context.Context, f *boundaryFlags) (server.Pools, []string, error) {
	dsns, err := f.resolve(ctx, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	pools := server.Pools{}
	var skipped []string
	for _, b := range boundary.All {
		dsn, ok := dsns[b]
		if !ok {
			continue
		}
		pool, err := openReadOnlyPool(ctx, dsn)
		if err != nil {
			if *f.dsns[b] == "" && db.SQLState(err) == pgerrcode.InvalidCatalogName {
				skipped = append(skipped, migrate.DatabaseName(f.prefix, b))
				continue
			}
			pools.Close()
			return nil, nil, fmt.Errorf("connect %s: %w", b, err)
		}
		pools[b] = pool
	}
	if len(pools) == 0 {
		return nil, skipped, errors.New("no boundary database found: none of " + strings.Join(skipped, ", ") + " exists (pass --db-prefix or --<boundary>-dsn)")
	}
	return pools, skipped, nil
}
