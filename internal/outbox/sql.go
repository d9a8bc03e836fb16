package outbox

import (
	"embed"
	"strings"
)

// The module's queries live in sql/*.sql (one statement per file).
//
//go:embed sql/*.sql
var queries embed.FS

func query(name string) string {
	b, err := queries.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("outbox: missing query " + name)
	}
	return strings.TrimSpace(string(b))
}

var (
	qAppendActiveDefinition      = query("append_active_definition")
	qDefinitionByQuadruple       = query("definition_by_quadruple")
	qAppendInsertEvents          = query("append_insert_events")
	qAppendInsertDeliveries      = query("append_insert_deliveries")
	qRegistryInsertDefinition    = query("registry_insert_definition")
	qRegistryInsertMembers       = query("registry_insert_members")
	qRegistryDefinitionByVersion = query("registry_definition_by_version")
	qRegistryActiveDefinition    = query("registry_active_definition")
	qRegistryListDefinitions     = query("registry_list_definitions")
	qActivationLock              = query("activation_lock")
	qRegistryLockDefinition      = query("registry_lock_definition")
	qRegistryRetireActive        = query("registry_retire_active")
	qRegistryActivate            = query("registry_activate")
	qProjectionRegister          = query("projection_register")
	qProjectionMarkReady         = query("projection_mark_ready")
	qProjectionReady             = query("projection_ready")
	qProjectionPointer           = query("projection_pointer")
	qProjectionPointerSet        = query("projection_pointer_set")
	qProjectionPointers          = query("projection_pointers")
	qRecordPublication           = query("record_publication")
)
