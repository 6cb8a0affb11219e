package localpg

import "syscall"

const isLinux = true

// setParentDeathSignal asks the kernel to send sig to the child when the
// thread that started it dies (see startServer).
func setParentDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) {
	attr.Pdeathsig = sig
}
