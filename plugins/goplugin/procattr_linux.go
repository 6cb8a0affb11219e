package goplugin

import "syscall"

// procAttr makes the kernel kill a plugin process when the host dies
// without closing it (a SIGKILL, a crash), so that no orphan outlives the
// host. Linux sends the signal when the OS thread that started the child
// exits; Go keeps its threads unless a goroutine locked to one exits, which
// this package never does, and a plugin killed early would only be
// restarted.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
