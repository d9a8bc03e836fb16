package retention

import (
	"errors"
	"fmt"

	"github.com/oceanway/core/internal/db"
)

// SQLSTATEs raised by outbox.retention_archive and the archived-id guard
// (outbox migration 00020).
const (
	CodeNotClosed       = "OWR01"
	CodeArchiveMismatch = "OWR02"
	CodeEventArchived   = "OWR03"
	CodeNoDrill         = "OWR04"
	CodeDrillRefused    = "OWR05"
)

var (
	// ErrInvalidOlderThan: --older-than must be positive.
	ErrInvalidOlderThan = errors.New("retention: --older-than must be a positive duration")
	// ErrNoArchiveDir: archive, verify and restore need --archive-dir.
	ErrNoArchiveDir = errors.New("retention: --archive-dir is required")
	// ErrNotClosed: the controlled function refused an event that is not
	// closed history (OWR01).
	ErrNotClosed = errors.New("retention: event is not closed history")
	// ErrArchiveMismatch: the archive does not describe the hot rows the run
	// would remove (OWR02).
	ErrArchiveMismatch = errors.New("retention: archive does not match the hot rows")
	// ErrEventArchived: an archived event id was appended again (OWR03).
	ErrEventArchived = errors.New("retention: event id was archived")
	// ErrNoRecoveryDrill: the controlled delete found no recorded restore
	// drill of the run's manifest over its events (OWR04, outbox 00096).
	ErrNoRecoveryDrill = errors.New("retention: no recorded recovery drill of the archive")
	// ErrDrillRefused: the recovery baseline refused a drill document
	// (OWR05: not a successful drill, or a drill into the source itself).
	ErrDrillRefused = errors.New("retention: recovery drill refused by the baseline")
	// ErrNoDrillTarget: archive and drill need a scratch database (--drill-dsn).
	ErrNoDrillTarget = errors.New("retention: a scratch database for the restore drill is required (--drill-dsn)")
	// ErrArchiveBusy: another `retention archive` runs on the database.
	ErrArchiveBusy = errors.New("retention: another archive run holds the database's archive lock")
	// ErrArchiveInvalid wraps every verification failure (*VerifyError).
	ErrArchiveInvalid = errors.New("retention: archive verification failed")
	// ErrRestoreTarget: the restore target is not a scratch database.
	ErrRestoreTarget = errors.New("retention: restore target is not a scratch database")
	// ErrRestoreMismatch: the restored rows do not reproduce the archive.
	ErrRestoreMismatch = errors.New("retention: restore drill did not reproduce the archive")
)

// VerifyError names the file of an archive that failed verification and why.
type VerifyError struct {
	File   string
	Reason string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("retention: archive verification failed: %s: %s", e.File, e.Reason)
}

// Unwrap lets errors.Is(err, ErrArchiveInvalid) match.
func (e *VerifyError) Unwrap() error { return ErrArchiveInvalid }

func invalid(file, format string, args ...any) error {
	return &VerifyError{File: file, Reason: fmt.Sprintf(format, args...)}
}

// TranslateError maps the retention SQLSTATEs to their sentinels, keeping
// the driver error in the chain; other errors are returned unchanged.
func TranslateError(err error) error {
	var sentinel error
	switch db.SQLState(err) {
	case CodeNotClosed:
		sentinel = ErrNotClosed
	case CodeArchiveMismatch:
		sentinel = ErrArchiveMismatch
	case CodeEventArchived:
		sentinel = ErrEventArchived
	case CodeNoDrill:
		sentinel = ErrNoRecoveryDrill
	case CodeDrillRefused:
		sentinel = ErrDrillRefused
	default:
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
