package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/conclavehq/conclave/core"
)

// Query is the query a policy set must answer: an object
// {"allow": bool, "code": string, "message": string}, and optionally
// "param": string, the request parameter a denial concerns.
const Query = "data.conclave.authz.decision"

// decisionRule is Query as a reference, to check the set defines it.
var decisionRule = ast.MustParseRef(Query)

// Config configures an Engine.
type Config struct {
	// Dir, when set, replaces the embedded policies with the .rego files in
	// this directory and its subdirectories (files ending in _test.rego are
	// ignored) — a policy author's workflow (`conclave serve --policy-dir`).
	// Defaults to the embedded set.
	Dir string
	// MemoEntries bounds the memo of decisions already made. A decision is a
	// pure function of its input (the policy set is fixed for the life of the
	// Engine and reads no clock or outside data), so a repeated input is
	// answered from the memo; when it is full it is emptied. Negative turns
	// the memo off. Defaults to 4096.
	MemoEntries int
}

// Engine decides with a compiled, prepared policy set. It is safe for
// concurrent use.
type Engine struct {
	query rego.PreparedEvalQuery

	memoMax int
	memoMu  sync.Mutex
	memo    map[string]core.Decision
}

var _ core.Authorizer = (*Engine)(nil)

// New loads and compiles the policy set cfg names and prepares its decision
// query. A policy that does not parse or compile fails New with an error
// naming the file and line; so does a set that defines no decision, or whose
// decision does not have the expected shape.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	compiler, source, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	rules := compiler.GetRules(decisionRule)
	if len(rules) == 0 {
		return nil, fmt.Errorf("policy: loading %s: no rule defines %s (a package conclave.authz with a decision rule is required)", source, Query)
	}

	pq, err := rego.New(
		rego.Query(Query),
		rego.Compiler(compiler),
		rego.SetRegoVersion(ast.RegoV1),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy: preparing %s: %w", Query, err)
	}
	e := &Engine{query: pq, memoMax: cfg.MemoEntries, memo: map[string]core.Decision{}}
	if e.memoMax == 0 {
		e.memoMax = 4096
	}
	if impure := nondeterministicCalls(compiler); len(impure) > 0 {
		e.memoMax = -1 // the same input may not give the same decision
	}

	// Probe once so that a set whose decision is undefined or misshapen
	// fails at start rather than on the first request.
	if _, err := e.decide(ctx, probeInput()); err != nil {
		var at []string
		for _, r := range rules {
			at = append(at, r.Location.String())
		}
		return nil, fmt.Errorf("policy: checking %s (decision defined at %s): %w", source, strings.Join(at, ", "), err)
	}
	return e, nil
}

// compile loads the policy set cfg names — the embedded set, or every
// non-test .rego file of cfg.Dir — and compiles it. Every evaluator of this
// package loads through it, so `--policy-dir` replaces all of them alike.
func compile(cfg Config) (*ast.Compiler, string, error) {
	fsys, source, prefix := fs.FS(FS), "embedded policies", "policies"
	if cfg.Dir != "" {
		info, err := os.Stat(cfg.Dir)
		if err != nil {
			return nil, "", fmt.Errorf("policy: %w", err)
		}
		if !info.IsDir() {
			return nil, "", fmt.Errorf("policy: %s is not a directory", cfg.Dir)
		}
		fsys, source, prefix = os.DirFS(cfg.Dir), cfg.Dir, cfg.Dir
	}

	modules, err := parseModules(fsys, prefix)
	if err != nil {
		return nil, "", fmt.Errorf("policy: loading %s: %w", source, err)
	}
	if len(modules) == 0 {
		return nil, "", fmt.Errorf("policy: loading %s: no .rego policy files", source)
	}
	compiler := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if compiler.Compile(modules); compiler.Failed() {
		return nil, "", fmt.Errorf("policy: compiling %s: %w", source, compiler.Errors)
	}
	return compiler, source, nil
}

// Decide evaluates the policy for one request. An undefined decision, or one
// of the wrong shape, is an error: the caller fails closed.
func (e *Engine) Decide(ctx context.Context, in *core.AuthzInput) (*core.Decision, error) {
	if in == nil {
		return nil, errors.New("policy: nil input")
	}
	var key string
	if e.memoMax > 0 {
		b, err := json.Marshal(in) // field order is fixed, so equal inputs give equal keys
		if err != nil {
			return nil, fmt.Errorf("policy: encoding input: %w", err)
		}
		key = string(b)
		e.memoMu.Lock()
		d, ok := e.memo[key]
		e.memoMu.Unlock()
		if ok {
			return &d, nil // a copy: callers may change what they get
		}
	}
	d, err := e.decide(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if e.memoMax > 0 {
		e.memoMu.Lock()
		if len(e.memo) >= e.memoMax {
			clear(e.memo)
		}
		e.memo[key] = *d
		e.memoMu.Unlock()
	}
	return d, nil
}

func (e *Engine) decide(ctx context.Context, in *core.AuthzInput) (*core.Decision, error) {
	rs, err := e.query.Eval(ctx, rego.EvalParsedInput(inputValue(in)))
	if err != nil {
		return nil, fmt.Errorf("evaluating %s: %w", Query, err)
	}
	return decisionOf(rs)
}

// nondeterministicCalls lists the built-ins the policy set calls whose
// results can change between calls with the same input (time.now_ns,
// http.send, rand.intn, …). Such a set cannot be memoized.
func nondeterministicCalls(c *ast.Compiler) []string {
	seen := map[string]bool{}
	for _, m := range c.Modules {
		ast.WalkExprs(m, func(x *ast.Expr) bool {
			if !x.IsCall() {
				return false
			}
			name := x.Operator().String()
			if b, ok := ast.BuiltinMap[name]; ok && b.Nondeterministic {
				seen[name] = true
			}
			return false
		})
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Memoized reports whether the engine answers repeated inputs from its memo.
func (e *Engine) Memoized() bool { return e.memoMax > 0 }

// parseModules parses every non-test .rego file of fsys. Module names are
// prefix joined with the file's path, so that errors name the file as the
// author knows it.
func parseModules(fsys fs.FS, prefix string) (map[string]*ast.Module, error) {
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".rego") && !strings.HasSuffix(p, "_test.rego") {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)

	modules := make(map[string]*ast.Module, len(names))
	var errs []error
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		file := joinPath(prefix, name)
		m, err := ast.ParseModuleWithOpts(file, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		modules[file] = m
	}
	return modules, errors.Join(errs...)
}

// joinPath names a file of an fs.FS (slash-separated) under prefix, a path
// of the operating system.
func joinPath(prefix, name string) string {
	if prefix == "policies" {
		return path.Join(prefix, name)
	}
	return filepath.Join(prefix, filepath.FromSlash(name))
}

// probeInput is an ordinary request: a key with every scope listing the models.
func probeInput() *core.AuthzInput {
	return &core.AuthzInput{
		Action:    core.ActionModelsRead,
		Principal: &core.AuthzPrincipal{Kind: "api_key", KeyID: "probe", Scopes: core.AllScopes, Modes: []string{}},
		Org:       &core.AuthzOrg{ID: "probe", Plan: core.PlanStandard},
	}
}

// decisionOf reads the decision out of a result set.
func decisionOf(rs rego.ResultSet) (*core.Decision, error) {
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, fmt.Errorf("%s is undefined", Query)
	}
	if len(rs) > 1 || len(rs[0].Expressions) > 1 {
		return nil, fmt.Errorf("%s has more than one value", Query)
	}
	obj, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %T, not an object {allow, code, message}", Query, rs[0].Expressions[0].Value)
	}
	allow, ok := obj["allow"].(bool)
	if !ok {
		return nil, fmt.Errorf("%s.allow is %T, not a boolean", Query, obj["allow"])
	}
	code, err := optionalString(obj, "code")
	if err != nil {
		return nil, err
	}
	message, err := optionalString(obj, "message")
	if err != nil {
		return nil, err
	}
	param, err := optionalString(obj, "param")
	if err != nil {
		return nil, err
	}
	if !allow && code == "" {
		return nil, fmt.Errorf("%s denies without a code", Query)
	}
	return &core.Decision{Allow: allow, Code: core.Code(code), Message: message, Param: param}, nil
}

func optionalString(obj map[string]any, key string) (string, error) {
	v, ok := obj[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s.%s is %T, not a string", Query, key, v)
	}
	return s, nil
}
