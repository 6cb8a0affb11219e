//go:build !linux

package goplugin

import "syscall"

// procAttr is nil where the kernel cannot tie a child's life to its parent.
func procAttr() *syscall.SysProcAttr { return nil }
