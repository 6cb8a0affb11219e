package localpg

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tempPrefix names StartTemp's directories in os.TempDir().
const tempPrefix = "cclpg"

// sweepAbandoned removes StartTemp directories whose owner died without
// calling Stop (a test binary killed by `go test -timeout`, say): those whose
// lock is free, whose server is not running and which are older than a
// minute. It is best effort.
func sweepAbandoned(log *slog.Logger) {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		root := filepath.Join(tmp, e.Name())
		if abandoned(root) {
			if err := os.RemoveAll(root); err == nil {
				log.Info("localpg: removed an abandoned temporary cluster", "dir", root)
			}
		}
	}
}

func abandoned(root string) bool {
	fi, err := os.Stat(root)
	if err != nil || time.Since(fi.ModTime()) < time.Minute {
		return false
	}
	if _, err := os.Stat(filepath.Join(root, "pg", "PG_VERSION")); err != nil {
		return false
	}
	f, err := os.OpenFile(filepath.Join(root, ".pg.lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false // starting or stopping right now
	}
	pidFile, err := os.ReadFile(filepath.Join(root, "pg", "postmaster.pid"))
	if err == nil {
		line, _, _ := strings.Cut(string(pidFile), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || pid <= 0 {
			return false
		}
		if err := syscall.Kill(pid, 0); err == nil || err == syscall.EPERM {
			return false // a server (or whoever has its pid now) is alive
		}
	}
	return true
}
