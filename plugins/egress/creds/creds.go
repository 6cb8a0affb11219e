// Package creds finds the credentials the egress layer injects into provider
// requests: API keys named by an engine's configuration and read from the
// environment (EnvCredentials) or given directly for tests and the simulated
// provider (StaticCredentials); short-lived AWS credentials from an STS
// AssumeRole per role and organisation (AWSRoleCredentials); a dispatcher by
// scheme (ServiceCredentials); and a Chain that lets a bring-your-own-key
// lookup answer first and fall back to the service's own credentials.
//
// Every type here implements core.Credentials and is safe for concurrent use.
// None of them logs, formats or returns a secret in an error.
package creds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// ErrNoCredential means a provider has no credential for the request: the
// engine names none it knows, or the scheme is not one it serves. Chain asks
// the next provider when it sees it; any other error stops the chain.
var ErrNoCredential = errors.New("no credential")

// ErrUnset means the credential an engine names exists in name only: its
// environment variable is unset or empty. It is a configuration error, not a
// reason to try another provider.
var ErrUnset = errors.New("credential not set")

// SourceService is the Credential.Source of the service's own credentials.
const SourceService = "service"

// IsAPIKeyScheme reports whether s carries a plain API key (bearer,
// x-api-key, google-api-key).
func IsAPIKeyScheme(s core.AuthScheme) bool {
	return s == core.AuthBearer || s == core.AuthXAPIKey || s == core.AuthGoogleAPIKey
}

func engineID(req *core.CredentialRequest) string {
	if req == nil || req.Engine == nil {
		return ""
	}
	return req.Engine.ID
}

func noCredential(req *core.CredentialRequest, why string) error {
	return fmt.Errorf("engine %q (scheme %s): %s: %w", engineID(req), req.Scheme, why, ErrNoCredential)
}

// Chain asks each provider in order and returns the first credential found.
// A provider that returns an error wrapping ErrNoCredential is skipped; any
// other error is returned at once, so a broken bring-your-own-key store never
// silently falls back to the service's key. An empty Chain has nothing.
type Chain []core.Credentials

// Credential implements core.Credentials.
func (c Chain) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	for _, p := range c {
		if p == nil {
			continue
		}
		cred, err := p.Credential(ctx, req)
		switch {
		case err == nil && cred != nil:
			return cred, nil
		case err == nil:
			return nil, fmt.Errorf("engine %q (scheme %s): provider %T returned no credential and no error", engineID(req), req.Scheme, p)
		case !errors.Is(err, ErrNoCredential):
			return nil, err
		}
	}
	return nil, noCredential(req, "no provider has one")
}

// EnvCredentials reads API keys from the environment. Engine.Credential
// names the variable, as "env:OPENAI_API_KEY" or plain "OPENAI_API_KEY". An
// engine that names no credential, or names one with another source prefix
// ("byok:…"), gets ErrNoCredential; a named variable that is unset or empty
// gets an error wrapping ErrUnset that names the variable.
type EnvCredentials struct {
	// LookupEnv reads one variable. Defaults to os.LookupEnv.
	LookupEnv func(name string) (string, bool)
}

// Credential implements core.Credentials.
func (e EnvCredentials) Credential(_ context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	if req == nil || req.Engine == nil {
		return nil, errors.New("creds: credential request names no engine")
	}
	if !IsAPIKeyScheme(req.Scheme) {
		return nil, noCredential(req, "not an API-key scheme")
	}
	name, ok := envVariable(req.Engine.Credential)
	if !ok {
		return nil, noCredential(req, "engine names no environment variable")
	}
	if !validVariableName(name) {
		return nil, fmt.Errorf("creds: engine %q names %q, which is not an environment variable name", req.Engine.ID, name)
	}
	lookup := e.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, _ := lookup(name)
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, fmt.Errorf("creds: environment variable %s for engine %q is unset or empty: %w", name, req.Engine.ID, ErrUnset)
	}
	return &core.Credential{Scheme: req.Scheme, Secret: v, Source: SourceService}, nil
}

// envVariable reads the variable name out of an Engine.Credential reference.
func envVariable(ref string) (string, bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", false
	}
	if name, ok := strings.CutPrefix(ref, "env:"); ok {
		return strings.TrimSpace(name), true
	}
	if strings.Contains(ref, ":") {
		return "", false // another source ("byok:…", "vault:…")
	}
	return ref, true
}

func validVariableName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// StaticCredentials gives fixed API keys: Keys by engine id, else Key for
// every API-key engine. It is meant for tests and the simulated provider,
// whose "keys" guard nothing. Its String, GoString and LogValue never print
// a key.
type StaticCredentials struct {
	// Key is given to every API-key engine not in Keys. Defaults to none.
	Key string
	// Keys gives a key per engine id. Defaults to none.
	Keys map[string]string
}

// Credential implements core.Credentials.
func (s StaticCredentials) Credential(_ context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	if req == nil || req.Engine == nil {
		return nil, errors.New("creds: credential request names no engine")
	}
	if !IsAPIKeyScheme(req.Scheme) {
		return nil, noCredential(req, "not an API-key scheme")
	}
	k, ok := s.Keys[req.Engine.ID]
	if !ok {
		k = s.Key
	}
	if k == "" {
		return nil, noCredential(req, "no static key")
	}
	return &core.Credential{Scheme: req.Scheme, Secret: k, Source: SourceService}, nil
}

// String never prints a key.
func (s StaticCredentials) String() string {
	return fmt.Sprintf("creds.StaticCredentials(default key set: %t, %d engine keys)", s.Key != "", len(s.Keys))
}

// GoString never prints a key either.
func (s StaticCredentials) GoString() string { return s.String() }

// LogValue keeps keys out of structured logs.
func (s StaticCredentials) LogValue() slog.Value { return slog.StringValue(s.String()) }

// ServiceCredentials are the service's own credentials, chosen by scheme:
// API-key schemes go to APIKeys, aws-sigv4 to AWS, and "none" gets an empty
// credential.
type ServiceCredentials struct {
	// APIKeys answers bearer, x-api-key and google-api-key requests.
	// Defaults to EnvCredentials{}.
	APIKeys core.Credentials
	// AWS answers aws-sigv4 requests, normally an *AWSRoleCredentials.
	// Defaults to none: aws-sigv4 engines get ErrNoCredential.
	AWS core.Credentials
}

// Credential implements core.Credentials.
func (s ServiceCredentials) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	if req == nil || req.Engine == nil {
		return nil, errors.New("creds: credential request names no engine")
	}
	switch {
	case req.Scheme == core.AuthNone:
		return &core.Credential{Scheme: core.AuthNone, Source: SourceService}, nil
	case IsAPIKeyScheme(req.Scheme):
		p := s.APIKeys
		if p == nil {
			p = EnvCredentials{}
		}
		return p.Credential(ctx, req)
	case req.Scheme == core.AuthAWSSigV4:
		if s.AWS == nil {
			return nil, noCredential(req, "no AWS credentials configured")
		}
		return s.AWS.Credential(ctx, req)
	}
	return nil, fmt.Errorf("creds: engine %q: unknown credential scheme %q", req.Engine.ID, req.Scheme)
}

var (
	_ core.Credentials = Chain(nil)
	_ core.Credentials = EnvCredentials{}
	_ core.Credentials = StaticCredentials{}
	_ core.Credentials = ServiceCredentials{}
)
