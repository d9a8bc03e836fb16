package retention

import (
	"embed"

	"github.com/oceanway/core/internal/db"
)

//go:embed sql/*.sql
var statementFiles embed.FS

var statements = db.MustLoadStatements("retention", statementFiles, "sql")

var (
	sqlPlan              = statements.Get("plan")
	sqlCutoff            = statements.Get("cutoff")
	sqlDBNow             = statements.Get("db_now")
	sqlBatch             = statements.Get("batch")
	sqlSegment           = statements.Get("segment")
	sqlDefinitions       = statements.Get("definitions")
	sqlArchiveRun        = statements.Get("archive_run")
	sqlRestoreTarget     = statements.Get("restore_target")
	sqlRestoreDefinition = statements.Get("restore_definition")
	sqlRestoreSegment    = statements.Get("restore_segment")
	sqlRestoreCheck      = statements.Get("restore_check")
	sqlRestoreAnalyze    = statements.Get("restore_analyze")
	sqlSessionUTC        = statements.Get("session_utc")
	sqlTriggersOff       = statements.Get("triggers_off")
	sqlTriggersOn        = statements.Get("triggers_on")
	sqlCurrentDatabase   = statements.Get("current_database")
	sqlArchiveLock       = statements.Get("archive_lock")
	sqlArchiveUnlock     = statements.Get("archive_unlock")
	sqlManifestUnrecord  = statements.Get("manifest_unrecorded")
	sqlRecordDrill       = statements.Get("record_drill")
	sqlDrillRuntime      = statements.Get("drill_runtime")
)
