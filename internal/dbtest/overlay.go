package dbtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oceanway/core/internal/migrate"
)

// MigrationsOverlayEnv names a directory whose files replace embedded
// migrations in the test databases: <dir>/<line>/<file>.sql stands in for
// <file>.sql of that line. The guard mutation check (scripts/guards, `make
// mutate-guards`) writes one disabled guard clause there and runs the
// already-built test binaries against it; the changed files change the
// fingerprint, so the templates are built afresh.
const MigrationsOverlayEnv = "OCEANWAY_DBTEST_MIGRATIONS_OVERLAY"

func overlayLines(lines []migrate.Line) ([]migrate.Line, error) {
	dir := os.Getenv(MigrationsOverlayEnv)
	if dir == "" {
		return lines, nil
	}
	out := make([]migrate.Line, len(lines))
	for i, l := range lines {
		out[i] = l
		sub := filepath.Join(dir, l.Name)
		if _, err := os.Stat(sub); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("dbtest: %s: %w", MigrationsOverlayEnv, err)
		}
		out[i].FS = overlayFS{base: l.FS, over: os.DirFS(sub)}
	}
	return out, nil
}

// overlayFS reads a file from over when it is there, else from base. Only
// files are replaced: the directory listing is base's.
type overlayFS struct{ base, over fs.FS }

func (o overlayFS) Open(name string) (fs.File, error) {
	if f, err := o.over.Open(name); err == nil {
		if st, err := f.Stat(); err == nil && !st.IsDir() {
			return f, nil
		}
		_ = f.Close()
	}
	return o.base.Open(name)
}

func (o overlayFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(o.base, name) }
