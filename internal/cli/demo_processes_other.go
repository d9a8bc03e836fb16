//go:build !linux

package cli

import "syscall"

// childProcAttr: no parent-death signal outside Linux; the demo stops its
// owner processes itself on every normal exit.
func childProcAttr() *syscall.SysProcAttr { return nil }
