package goplugin

// Process describes a running plugin process, for tests.
type Process struct {
	Name string
	PID  int
	Dir  string
}

// Processes lists h's plugin processes that have started.
func Processes(h *Host) []Process {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ps []Process
	for name, s := range h.plugins {
		s.mu.Lock()
		g := s.cur
		s.mu.Unlock()
		if g != nil && g.started() && g.proc != nil {
			ps = append(ps, Process{Name: name, PID: g.proc.pid, Dir: g.proc.dir})
		}
	}
	return ps
}
