// Package deptest checks the import rules between Conclave's top-level
// folders. Each folder states its rule in its own deps_test.go with Check;
// docs/architecture.md lists the rules and why they hold.
//
// A rule covers the non-test code of a folder's packages and their whole
// dependency graph (what `go list -deps` reports), read once per test
// binary for the host's build and for WebAssembly (GOOS=wasip1), which
// alone builds the guest plugins. Tests are left out: a test may import
// whatever it needs to exercise the code.
//
// It is test tooling: only _test.go files import it. Check is safe for
// concurrent use by parallel tests.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Module is Conclave's module path.
const Module = "github.com/conclavehq/conclave"

// Third-party libraries that rules name, by what they are. Rules copy them
// into Rule.Forbidden; nothing changes them.
var (
	// Storage is the database driver and the job queue built on it.
	Storage = []string{"github.com/jackc/pgx", "github.com/riverqueue/river"}
	// PolicyEngine is OPA, which only policies/ runs.
	PolicyEngine = []string{"github.com/open-policy-agent/opa"}
	// PluginRuntimes are the WebAssembly runtime and go-plugin.
	PluginRuntimes = []string{"github.com/tetratelabs/wazero", "github.com/hashicorp/go-plugin"}
)

// Rule is an import rule for some of the module's packages.
type Rule struct {
	// Packages selects the packages the rule covers: a path.Match pattern
	// over module-relative import paths ("api", "adapters/example/*/*"),
	// covering the matches and every package below them; "." covers the
	// whole module. Required.
	Packages string
	// Except lists patterns, of the same form as Packages, of packages the
	// rule leaves out. Defaults to none.
	Except []string
	// Only, when set, lists the module's folders (module-relative, such as
	// "core") the covered packages may depend on; any other package of the
	// module is forbidden. Third-party packages are left to Forbidden.
	// Defaults to none: every package of the module is allowed.
	Only []string
	// Forbidden lists import paths the covered packages may not depend on,
	// each with everything below it: full paths, such as Module+"/api" or
	// "github.com/jackc/pgx". Defaults to none.
	Forbidden []string
	// Planned marks a rule written ahead of its folder (mcp/, before it has
	// Go code): covering no package is then not a failure. Defaults to
	// false: a rule that covers nothing fails, as a mistyped Packages would.
	Planned bool
}

// Check fails t once for each dependency of a covered package that r
// forbids, naming both; and once when r covers no package, unless r is
// Planned.
func Check(t testing.TB, r Rule) {
	t.Helper()
	if r.Packages == "" {
		t.Fatal("deptest: Rule.Packages is required")
	}
	deps, err := graph()
	if err != nil {
		t.Fatalf("deptest: reading the dependency graph: %v", err)
	}
	pkgs := make([]string, 0, len(deps))
	for p := range deps {
		if covers(r.Packages, p) && !slices.ContainsFunc(r.Except, func(x string) bool { return covers(x, p) }) {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	switch {
	case len(pkgs) == 0 && r.Planned:
		t.Logf("deptest: %s has no Go package yet; its rule checked nothing", r.Packages)
	case len(pkgs) == 0:
		t.Errorf("deptest: no package matches %s", r.Packages)
	}
	for _, p := range pkgs {
		for _, dep := range deps[p] {
			if why := r.forbids(dep); why != "" {
				t.Errorf("%s depends on %s, which %s", p, dep, why)
			}
		}
	}
}

// forbids says why r forbids dep, or "" when it does not.
func (r Rule) forbids(dep string) string {
	for _, f := range r.Forbidden {
		if under(dep, f) {
			return "the rule forbids (" + f + ")"
		}
	}
	if len(r.Only) == 0 || !under(dep, Module) {
		return ""
	}
	for _, o := range r.Only {
		if under(dep, Module+"/"+o) {
			return ""
		}
	}
	return "is outside " + strings.Join(r.Only, ", ")
}

// under reports whether p is path or below it.
func under(p, path string) bool { return p == path || strings.HasPrefix(p, path+"/") }

// covers reports whether the module-relative package p matches pattern or
// lies below a package that does.
func covers(pattern, p string) bool {
	if pattern == "." {
		return true
	}
	for q := p; q != "." && q != "/"; q = path.Dir(q) {
		if ok, _ := path.Match(pattern, q); ok {
			return true
		}
	}
	return false
}

// platforms are the builds whose graphs are read: the host's, and
// WebAssembly, the only build of the guest plugins.
var platforms = [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}}

// graph maps each package of the module, module-relative, to its non-test
// dependencies on any platform.
var graph = sync.OnceValues(func() (map[string][]string, error) {
	all := map[string]map[string]bool{}
	for _, env := range platforms {
		if err := list(env, all); err != nil {
			return nil, err
		}
	}
	out := make(map[string][]string, len(all))
	for p, deps := range all {
		for d := range deps {
			out[p] = append(out[p], d)
		}
		sort.Strings(out[p])
	}
	return out, nil
})

// list adds the module's packages built with env, and their dependencies,
// to all.
func list(env []string, all map[string]map[string]bool) error {
	cmd := exec.Command("go", "list", "-json=ImportPath,GoFiles,Deps", Module+"/...")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list %v: %w\n%s", env, err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		var pkg struct {
			ImportPath string
			GoFiles    []string
			Deps       []string
		}
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("go list %v: %w", env, err)
		}
		if len(pkg.GoFiles) == 0 {
			continue // nothing of it is built on this platform
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg.ImportPath, Module), "/")
		if rel == "" {
			rel = "."
		}
		if all[rel] == nil {
			all[rel] = map[string]bool{}
		}
		for _, d := range pkg.Deps {
			all[rel][d] = true
		}
	}
	if len(all) < 10 {
		return fmt.Errorf("go list %v listed %d packages of %s: too few to be the module", env, len(all), Module)
	}
	return nil
}
