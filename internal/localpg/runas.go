package localpg

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// runAs is the OS user the PostgreSQL binaries run as: the current user, or
// `postgres` when we are root (PostgreSQL refuses to run as root).
type runAs struct {
	switchUser bool
	uid, gid   uint32
	groups     []uint32 // postgres's supplementary groups
}

func currentRunAs() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runAs{}, fmt.Errorf("localpg: running as root, and PostgreSQL refuses to run as root, but there is no `postgres` OS user to run it as (%v); create one (e.g. `useradd --system postgres`) or run as a non-root user", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return runAs{}, fmt.Errorf("localpg: user postgres: %w", err)
	}
	as := runAs{switchUser: true, uid: uint32(uid), gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != as.gid {
				as.groups = append(as.groups, uint32(g))
			}
		}
	}
	return as, nil
}

func (a runAs) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	if a.switchUser {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}
	}
	return attr
}

// chown gives path to the server's user (no-op unless switching users).
func (a runAs) chown(path string) error {
	if !a.switchUser {
		return nil
	}
	if err := os.Lchown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// checkTraversable verifies that the server's user can reach dir: every
// directory from / down to dir must be searchable by it.
func (a runAs) checkTraversable(dir string) error {
	if !a.switchUser {
		return nil
	}
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("localpg: %w", err)
		}
		if !a.canSearch(fi) {
			return fmt.Errorf("localpg: the server runs as OS user postgres, which cannot traverse %s (mode %v); choose a Dir outside it or make it traversable (chmod o+x %s)", p, fi.Mode().Perm(), p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func (a runAs) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let the server report it
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case a.inGroup(st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func (a runAs) inGroup(gid uint32) bool {
	if gid == a.gid {
		return true
	}
	for _, g := range a.groups {
		if g == gid {
			return true
		}
	}
	return false
}

// checkOwner verifies that an existing data directory belongs to the
// server's user; PostgreSQL refuses any other owner.
func (a runAs) checkOwner(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	want := uint32(os.Geteuid())
	who := "the current user"
	if a.switchUser {
		want, who = a.uid, "OS user postgres"
	}
	if st.Uid != want {
		return fmt.Errorf("localpg: data directory %s is owned by uid %d, but the server runs as %s (uid %d); chown -R it or use another Dir", dir, st.Uid, who, want)
	}
	return nil
}

// copyTree copies directory src to the new path dst, keeping permission
// bits, and gives everything to the server's user (when switching users).
func copyTree(src, dst string, as runAs) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
			return as.chown(target)
		case d.Type().IsRegular():
			if err := copyFile(path, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("localpg: unexpected file type at %s", path)
		}
		if err := os.Chmod(target, info.Mode().Perm()); err != nil {
			return err
		}
		return as.chown(target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
