//go:build !linux

package localpg

import "syscall"

const isLinux = false

// setParentDeathSignal is a no-op: only Linux has a parent-death signal.
func setParentDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
