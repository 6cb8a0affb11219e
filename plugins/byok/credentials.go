package byok

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress/creds"
)

// Lookup is the part of core.ProviderCredentials the call path reads: an
// organisation's stored credential for one provider, with the sealed key,
// or an error wrapping core.ErrNotFound when there is none. Every
// core.ProviderCredentials is one.
type Lookup interface {
	LookupProviderCredential(ctx context.Context, orgID, provider string) (*core.ProviderCredential, error)
}

var _ Lookup = core.ProviderCredentials(nil)

// ResolverConfig configures a Resolver.
type ResolverConfig struct {
	// Store reads the stored credentials. Required.
	Store Lookup
	// Sealer opens the sealed keys. Required.
	Sealer *Sealer
	// TTL is how long a lookup — a sealed key, a role, or the absence of
	// either — is cached per organisation and provider: a credential set or
	// removed takes effect within it. Plaintext keys are never cached; each
	// call opens the sealed one. Negative turns the cache off. Defaults to
	// 30s.
	TTL time.Duration
	// MaxEntries bounds the cache; when full it is emptied. Defaults to
	// 10,000.
	MaxEntries int
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Resolver finds organisations' stored credentials, with a short cache in
// front of the store. It is safe for concurrent use.
type Resolver struct {
	cfg   ResolverConfig
	mu    sync.Mutex
	cache map[cacheKey]cached
}

type cacheKey struct{ org, provider string }

type cached struct {
	rec     *core.ProviderCredential // nil: the organisation has none
	expires time.Time
}

// NewResolver checks cfg and returns the resolver.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("byok: ResolverConfig.Store is required")
	case cfg.Sealer == nil:
		return nil, errors.New("byok: ResolverConfig.Sealer is required")
	}
	if cfg.TTL == 0 {
		cfg.TTL = 30 * time.Second
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 10_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Resolver{cfg: cfg, cache: map[cacheKey]cached{}}, nil
}

// lookup returns the organisation's record for provider, nil when it has
// none. A store failure is an error.
func (r *Resolver) lookup(ctx context.Context, org, provider string) (*core.ProviderCredential, error) {
	k := cacheKey{org, provider}
	now := r.cfg.Now()
	if r.cfg.TTL > 0 {
		r.mu.Lock()
		c, ok := r.cache[k]
		r.mu.Unlock()
		if ok && now.Before(c.expires) {
			return c.rec, nil
		}
	}
	rec, err := r.cfg.Store.LookupProviderCredential(ctx, org, provider)
	switch {
	case errors.Is(err, core.ErrNotFound):
		rec = nil
	case err != nil:
		return nil, err
	case rec == nil:
		return nil, errors.New("byok: the store returned no record and no error")
	}
	if r.cfg.TTL > 0 {
		r.mu.Lock()
		if len(r.cache) >= r.cfg.MaxEntries {
			clear(r.cache)
		}
		r.cache[k] = cached{rec: rec, expires: now.Add(r.cfg.TTL)}
		r.mu.Unlock()
	}
	return rec, nil
}

// Forget drops what is cached for an organisation, so that a change made
// in this process takes effect at once.
func (r *Resolver) Forget(orgID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.cache {
		if k.org == orgID {
			delete(r.cache, k)
		}
	}
}

// Credentials is the core.Credentials of organisations' own credentials.
// It answers a request that names an organisation (CredentialRequest.OrgID)
// for an engine whose provider (ProviderFor) the organisation registered:
// the opened API key, or, for aws, short-lived credentials of the
// organisation's role assumed through AWS. Anything else gets an error
// wrapping creds.ErrNoCredential, so that a creds.Chain falls back to the
// service's credentials; a store or sealing failure is a plain error, so
// that it never silently does. It is safe for concurrent use.
type Credentials struct {
	// Resolver finds the stored credentials. Required.
	Resolver *Resolver
	// AWS assumes roles for aws-sigv4 engines (normally a
	// *creds.AWSRoleCredentials signing its AssumeRole calls with the
	// service's base identity). It is asked with a copy of the engine that
	// names the organisation's role ARN and external id. Without it, an
	// organisation's aws role cannot be used and its calls fail.
	AWS core.Credentials
}

// Credential implements core.Credentials.
func (c *Credentials) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	if req == nil || req.Engine == nil {
		return nil, errors.New("byok: credential request names no engine")
	}
	if req.OrgID == "" {
		return nil, fmt.Errorf("engine %q: a call for the service itself: %w", req.Engine.ID, creds.ErrNoCredential)
	}
	provider, ok := ProviderFor(req.Engine, req.Scheme)
	if !ok {
		return nil, fmt.Errorf("engine %q (family %q, scheme %s) has no bring-your-own-key provider: %w", req.Engine.ID, req.Engine.Family, req.Scheme, creds.ErrNoCredential)
	}
	rec, err := c.Resolver.lookup(ctx, req.OrgID, provider)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("byok: reading organisation %s's %s credential: %w", req.OrgID, provider, err)
	}
	if rec == nil {
		return nil, fmt.Errorf("organisation %s has no %s credential of its own: %w", req.OrgID, provider, creds.ErrNoCredential)
	}
	source := core.SourceBYOK(provider)
	if provider == core.ProviderAWS {
		if c.AWS == nil {
			return nil, fmt.Errorf("byok: organisation %s's AWS role cannot be assumed: the service has no AWS identity to assume it with", req.OrgID)
		}
		e := *req.Engine
		e.AWSRoleARN, e.AWSExternalID = rec.RoleARN, rec.ExternalID
		cred, err := c.AWS.Credential(ctx, &core.CredentialRequest{Engine: &e, Scheme: req.Scheme, OrgID: req.OrgID})
		if err != nil {
			if errors.Is(err, creds.ErrNoCredential) {
				// Never let the chain fall back to the service's role for
				// a call the organisation meant to run on its own.
				return nil, fmt.Errorf("byok: organisation %s's AWS role: %v", req.OrgID, err)
			}
			return nil, fmt.Errorf("byok: organisation %s's AWS role: %w", req.OrgID, err)
		}
		out := *cred
		out.Source = source
		return &out, nil
	}
	key, err := c.Resolver.cfg.Sealer.Open(req.OrgID, provider, rec.KeyID, rec.Sealed)
	if err != nil {
		return nil, fmt.Errorf("byok: organisation %s's %s key: %w", req.OrgID, provider, err)
	}
	return &core.Credential{Scheme: req.Scheme, Secret: string(key), Source: source}, nil
}

var _ core.Credentials = (*Credentials)(nil)
