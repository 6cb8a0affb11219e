package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

var binaries = []string{"initdb", "pg_ctl", "postgres"}

// resolveBinDir finds the directory holding initdb, pg_ctl and postgres.
func resolveBinDir(explicit string) (string, error) {
	if explicit != "" {
		return checkBinDir(explicit, "BinDir")
	}
	if env := os.Getenv("CONCLAVE_PG_BIN"); env != "" {
		return checkBinDir(env, "$CONCLAVE_PG_BIN")
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		var cands []string
		// Prefer the real installation directory when initdb is a symlink.
		if r, err := filepath.EvalSymlinks(p); err == nil {
			cands = append(cands, filepath.Dir(r))
		}
		cands = append(cands, filepath.Dir(p))
		for _, d := range cands {
			if hasBinaries(d) {
				return filepath.Abs(d)
			}
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(matches, func(i, j int) bool {
		return versionLess(filepath.Base(filepath.Dir(matches[j])), filepath.Base(filepath.Dir(matches[i])))
	})
	for _, d := range matches {
		if hasBinaries(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w (searched $CONCLAVE_PG_BIN, PATH and /usr/lib/postgresql/*/bin)", ErrNoBinaries)
}

func checkBinDir(dir, what string) (string, error) {
	if !hasBinaries(dir) {
		return "", fmt.Errorf("%w (%s=%s lacks some of them)", ErrNoBinaries, what, dir)
	}
	return filepath.Abs(dir)
}

func hasBinaries(dir string) bool {
	for _, name := range binaries {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionLess compares dotted numeric versions ("9.6" < "15").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		if errX != nil || errY != nil {
			if as[i] != bs[i] {
				return as[i] < bs[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// serverVersion runs `postgres --version` and returns the version, e.g. "15.18".
func serverVersion(binDir string) (string, error) {
	out, err := exec.Command(filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("localpg: postgres --version: %w", err)
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return "", fmt.Errorf("localpg: unexpected postgres --version output %q", out)
	}
	v := fields[2]
	if v == "" || strings.ContainsAny(v, `/\`) {
		return "", fmt.Errorf("localpg: unexpected postgres --version output %q", out)
	}
	return v, nil
}

// DefaultInitCache returns the conventional Config.InitCache directory for
// the binaries binDir resolves to (empty: as Config.BinDir):
// $XDG_CACHE_HOME/conclave/pg-initdb-<version> (os.UserCacheDir). It errors
// when no binaries or no cache directory are available.
func DefaultInitCache(binDir string) (string, error) {
	dir, err := resolveBinDir(binDir)
	if err != nil {
		return "", fmt.Errorf("localpg: %w", err)
	}
	v, err := serverVersion(dir)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("localpg: %w", err)
	}
	return filepath.Join(cache, "conclave", "pg-initdb-"+v), nil
}

// bins runs the PostgreSQL binaries as the right OS user.
type bins struct {
	dir string
	as  runAs
	log *slog.Logger
}

func (b bins) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(b.dir, name), args...)
	cmd.Dir = "/" // the caller's working directory may be closed to `postgres`
	cmd.Env = childEnv()
	cmd.SysProcAttr = b.as.sysProcAttr()
	return cmd
}

// childEnv is our environment without libpq/server variables (PGDATA,
// PGPORT, …) that could redirect the binaries.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// running reports whether a server runs on dir (`pg_ctl status`).
func (b bins) running(ctx context.Context, dir string) (bool, error) {
	cmd := b.command("pg_ctl", "status", "-D", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 3:
		return false, nil
	default:
		return false, fmt.Errorf("localpg: pg_ctl status -D %s: %v: %s", dir, err, strings.TrimSpace(out.String()))
	}
}

// ensureInitialized makes dir a PostgreSQL data directory unless it is one.
// The new cluster is built in a sibling staging directory and renamed into
// place, so a crash never leaves a half-made cluster at dir. The caller holds
// the lock.
func (b bins) ensureInitialized(ctx context.Context, dir, cache string) error {
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		return b.as.checkOwner(dir)
	}
	// dir must be missing or empty.
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("localpg: %s is not empty but holds no PostgreSQL cluster (no PG_VERSION); remove it or choose another Dir", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("localpg: %w", err)
	}

	stage := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".init")
	if err := os.RemoveAll(stage); err != nil { // leftover of a crash
		return fmt.Errorf("localpg: %w", err)
	}
	defer func() { _ = os.RemoveAll(stage) }()

	copied := false
	if cache != "" {
		ok, err := b.useCache(cache, stage)
		if err != nil {
			b.log.Warn("localpg: not using the initdb cache", "cache", cache, "err", err)
			if err := os.RemoveAll(stage); err != nil {
				return fmt.Errorf("localpg: %w", err)
			}
		}
		copied = ok && err == nil
	}
	if !copied {
		if err := b.initdb(ctx, stage); err != nil {
			return err
		}
		if cache != "" {
			b.fillCache(stage, cache)
		}
	}

	// Move into place. An existing empty dir is replaced; if it cannot be
	// removed (a mount point, say), move the contents instead.
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return b.moveContents(stage, dir)
	}
	if err := os.Rename(stage, dir); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// moveContents moves stage's entries into the existing, empty dir,
// PG_VERSION last so that it marks a complete cluster.
func (b bins) moveContents(stage, dir string) error {
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if err := b.as.chown(dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	for _, e := range entries {
		if e.Name() == "PG_VERSION" {
			continue
		}
		if err := os.Rename(filepath.Join(stage, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("localpg: %w", err)
		}
	}
	if err := os.Rename(filepath.Join(stage, "PG_VERSION"), filepath.Join(dir, "PG_VERSION")); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

func (b bins) initdb(ctx context.Context, stage string) error {
	if err := os.Mkdir(stage, 0o700); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if err := b.as.chown(stage); err != nil {
		return err
	}
	b.log.Info("localpg: initialising a new cluster (initdb)")
	locales := []string{"--no-locale"}
	if isLinux {
		// Byte-order collation like C, but Unicode-aware upper()/lower().
		locales = []string{"--locale=C.UTF-8", "--no-locale"}
	}
	var err error
	for i, loc := range locales {
		cmd := b.command("initdb", "-D", stage, "--auth=trust", "--username=postgres",
			"--encoding=UTF8", "--no-sync", loc)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err = cmd.Run(); err == nil {
			return nil
		}
		err = fmt.Errorf("localpg: initdb failed: %v\n%s", err, strings.TrimSpace(out.String()))
		if i+1 < len(locales) && strings.Contains(out.String(), "locale") {
			b.log.Info("localpg: initdb failed, retrying with the C locale", "err", err)
			continue
		}
		break
	}
	return err
}

// useCache copies the cached initdb output into stage. It returns false
// without error when the cache is empty.
func (b bins) useCache(cache, stage string) (bool, error) {
	cached, err := os.ReadFile(filepath.Join(cache, "PG_VERSION"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	v, err := serverVersion(b.dir)
	if err != nil {
		return false, err
	}
	major, _, _ := strings.Cut(v, ".")
	if strings.TrimSpace(string(cached)) != major {
		return false, fmt.Errorf("cache holds a PostgreSQL %s cluster, the binaries are %s", strings.TrimSpace(string(cached)), v)
	}
	b.log.Info("localpg: copying a cached initdb output", "cache", cache)
	if err := copyTree(cache, stage, b.as); err != nil {
		return false, err
	}
	return true, nil
}

// fillCache stores a copy of a fresh initdb output at cache, atomically.
// Failures only cost speed, so they are logged, not returned.
func (b bins) fillCache(stage, cache string) {
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		b.log.Warn("localpg: cannot fill the initdb cache", "err", err)
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(cache), "."+filepath.Base(cache)+".tmp")
	if err != nil {
		b.log.Warn("localpg: cannot fill the initdb cache", "err", err)
		return
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	dst := filepath.Join(tmp, "data")
	if err := copyTree(stage, dst, runAs{}); err != nil {
		b.log.Warn("localpg: cannot fill the initdb cache", "err", err)
		return
	}
	// Fails harmlessly when a concurrent filler got there first.
	if err := os.Rename(dst, cache); err == nil {
		b.log.Info("localpg: filled the initdb cache", "cache", cache)
	}
}
