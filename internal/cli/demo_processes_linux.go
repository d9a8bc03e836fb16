package cli

import "syscall"

// childProcAttr makes an owner process receive SIGKILL when the demo that
// started it dies, so none outlives a crashed demo.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
