package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// demoKeyFile is the file in the data directory that keeps the demo key's
// secret, so that every `serve --demo` on that directory prints the same
// key (see docs/rationale.md).
const demoKeyFile = "demo-key"

// demo is what `serve --demo` prints: the demo organisation, its balance
// and a live key for it.
type demo struct {
	org     *core.Org
	balance core.Micros
	secret  string
	// ownerLink is a fresh set-up link for the demo owner (demoOwnerEmail).
	ownerLink string
	linkTTL   time.Duration
}

// demoOwnerEmail is the demo organisation's owner, created on the first
// `serve --demo`.
const demoOwnerEmail = "owner@demo.example"

// demoOwnerLink ensures the demo organisation's owner and returns a new
// set-up link for them: on every start, as the demo key is printed on every
// start, so that whoever runs `make run` can always sign in (a link is
// single-use and expires; unused ones simply lapse). It is the operator's
// doing in the audit trail.
func demoOwnerLink(ctx context.Context, svc *people.Service, store *pgstore.Store, org *core.Org) (string, error) {
	ctx = core.WithActor(ctx, core.Operator)
	p, err := store.PersonByEmail(ctx, demoOwnerEmail)
	if errors.Is(err, core.ErrNotFound) {
		_, link, err := svc.CreatePerson(ctx, org.ID, demoOwnerEmail, "Demo Owner", core.RoleOwner)
		if err != nil {
			return "", fmt.Errorf("creating the demo owner: %w", err)
		}
		return link, nil
	}
	if err != nil {
		return "", fmt.Errorf("finding the demo owner: %w", err)
	}
	link, err := svc.SetupLink(ctx, p.ID)
	if err != nil {
		return "", fmt.Errorf("making the demo owner's set-up link: %w", err)
	}
	return link, nil
}

// prepareDemo ensures the demo organisation (ticker DEMO) and a usable key
// for it. The key kept in dataDir is reused while it authenticates for that
// organisation; otherwise — no file yet, a revoked or expired key, another
// database's — a new key is issued and kept. A file others could read is
// not trusted: its key is revoked and replaced.
func prepareDemo(ctx context.Context, store *pgstore.Store, dataDir string, log *slog.Logger) (*demo, error) {
	ctx = core.WithActor(ctx, core.Operator) // serve --demo is the operator's doing
	org, err := store.OrgByTicker(ctx, "DEMO")
	if errors.Is(err, core.ErrNotFound) {
		org, _, err = store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Demo", Ticker: "DEMO"})
	}
	if err != nil {
		return nil, fmt.Errorf("preparing the demo organisation: %w", err)
	}
	path := filepath.Join(dataDir, demoKeyFile)
	secret, err := reuseDemoKey(ctx, store, org, path, log)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		if secret, err = issueDemoKey(ctx, store, org, path); err != nil {
			return nil, err
		}
	}
	bal, err := store.GetBalance(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	return &demo{org: org, balance: bal.Balance, secret: secret}, nil
}

// reuseDemoKey returns the kept key when it still authenticates for org,
// and "" when a new one is needed.
func reuseDemoKey(ctx context.Context, store *pgstore.Store, org *core.Org, path string, log *slog.Logger) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the demo key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the demo key %s is not a regular file; remove it", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the demo key: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if !core.WellFormedKey(secret) {
		return "", nil
	}
	k, kOrg, err := store.KeyByHash(ctx, core.HashKey(secret))
	if errors.Is(err, core.ErrNotFound) {
		return "", nil // another database's key
	}
	if err != nil {
		return "", fmt.Errorf("checking the demo key: %w", err)
	}
	if kOrg.ID != org.ID {
		return "", nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// Someone else may have read it: it is no longer only this
		// user's to use.
		if _, err := store.RevokeKey(ctx, k.ID); err != nil {
			return "", fmt.Errorf("revoking the exposed demo key: %w", err)
		}
		log.Warn("the demo key's file could be read by other users: its key is revoked and a new one issued",
			slog.String("file", path), slog.String("mode", fi.Mode().Perm().String()), slog.String("key_id", k.ID))
		return "", nil
	}
	if k.Status(time.Now()) != "" {
		return "", nil // revoked or expired
	}
	return secret, nil
}

// issueDemoKey issues a live key for org and keeps its secret in path,
// readable by this user only; the file is replaced whole, never half
// written.
func issueDemoKey(ctx context.Context, store *pgstore.Store, org *core.Org, path string) (string, error) {
	secret, hash := core.NewKeySecret(false)
	if _, err := store.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret), Name: "demo"}); err != nil {
		return "", fmt.Errorf("issuing the demo key: %w", err)
	}
	dir := filepath.Dir(path)
	// 0755 like the managed cluster's parent, which its server's OS user
	// must traverse; the file itself is 0600.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("keeping the demo key: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+demoKeyFile+"-*") // created 0600
	if err != nil {
		return "", fmt.Errorf("keeping the demo key: %w", err)
	}
	_, werr := f.WriteString(secret + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("keeping the demo key: %w", werr)
	}
	return secret, nil
}

// banner is what serve prints on stdout once it listens: the URL, and with
// --demo the dashboard's (the one origin), the demo organisation and its key, last, so that they are the
// lines a person sees (the logs go to stderr).
func banner(base, origin string, d *demo) string {
	s := fmt.Sprintf("Conclave is serving on %s\n", base)
	if d != nil {
		s += fmt.Sprintf("Dashboard: %s/ (sign in there)\n", origin)
		s += fmt.Sprintf("MCP clients: %s/mcp (Claude, ChatGPT, VS Code, Cursor sign you in there; or send the demo key)\n", origin)
		s += fmt.Sprintf("Demo organisation %s (%s), balance $%s\nDemo key: %s\n", d.org.Ticker, d.org.ID, d.balance, d.secret)
		if d.ownerLink != "" {
			s += fmt.Sprintf("Demo owner %s: open %s to register a passkey or set a password (single-use, for %s)\n",
				demoOwnerEmail, d.ownerLink, core.Spell(d.linkTTL))
		}
	}
	return s
}
