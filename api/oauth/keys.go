package oauth

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// The issuer signs access tokens with RS256 and a 2048-bit RSA key: every
// client library verifies it, and verification — the cost paid on every
// /mcp call — is several times cheaper than ECDSA's (signing, once per
// token, is dearer).
const (
	signingAlg     = jose.RS256
	signingKeyBits = 2048
)

// KeyStore holds the issuer's signing keys (internal/pgstore implements
// it): created on first use, shared by every replica.
type KeyStore interface {
	// EnsureSigningKey returns the active key, storing candidate as it when
	// there is none.
	EnsureSigningKey(ctx context.Context, candidate *coreoauth.SigningKey) (*coreoauth.SigningKey, error)
	// SigningKeys returns every key that may verify a live token, the
	// active one first.
	SigningKeys(ctx context.Context) ([]*coreoauth.SigningKey, error)
}

// signer is the active signing key as zitadel's op.SigningKey.
type signer struct {
	id  string
	key *rsa.PrivateKey
	der []byte
}

func (s *signer) SignatureAlgorithm() jose.SignatureAlgorithm { return signingAlg }
func (s *signer) Key() any                                    { return s.key }
func (s *signer) ID() string                                  { return s.id }

// publicKey is a verifying key as zitadel's op.Key.
type publicKey struct{ jwk jose.JSONWebKey }

func (k *publicKey) ID() string { return k.jwk.KeyID }
func (k *publicKey) Algorithm() jose.SignatureAlgorithm {
	return jose.SignatureAlgorithm(k.jwk.Algorithm)
}
func (k *publicKey) Use() string { return k.jwk.Use }
func (k *publicKey) Key() any    { return k.jwk.Key }

// loadSigner returns the issuer's active key, generating a candidate only
// when the store has none (the first start of the first replica).
func loadSigner(ctx context.Context, store KeyStore) (*signer, error) {
	keys, err := store.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the issuer's signing key: %w", err)
	}
	var k *coreoauth.SigningKey
	if len(keys) > 0 {
		k = keys[0]
	} else {
		priv, err := rsa.GenerateKey(rand.Reader, signingKeyBits)
		if err != nil {
			return nil, fmt.Errorf("generating the issuer's signing key: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, err
		}
		if k, err = store.EnsureSigningKey(ctx, &coreoauth.SigningKey{ID: core.NewID("key"), Algorithm: string(signingAlg),
			PrivateKey: der}); err != nil {
			return nil, fmt.Errorf("storing the issuer's signing key: %w", err)
		}
	}
	priv, err := parsePrivate(k)
	if err != nil {
		return nil, err
	}
	return &signer{id: k.ID, key: priv, der: k.PrivateKey}, nil
}

func parsePrivate(k *coreoauth.SigningKey) (*rsa.PrivateKey, error) {
	if k.Algorithm != string(signingAlg) {
		return nil, fmt.Errorf("signing key %s: algorithm %q is not %s", k.ID, k.Algorithm, signingAlg)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(k.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", k.ID, err)
	}
	priv, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s is not an RSA key", k.ID)
	}
	return priv, nil
}

// codeKey derives from the signing key the 32-byte key zitadel encrypts
// authorization codes with. A code is only ever looked up by its hash,
// never decrypted, so the key's job is to make codes unguessable; deriving
// it from the issuer's key gives every replica the same one without a
// second secret to keep.
func codeKey(s *signer) ([32]byte, error) {
	var out [32]byte
	k, err := hkdf.Key(sha256.New, s.der, nil, "conclave oauth authorization codes", len(out))
	if err != nil {
		return out, err
	}
	copy(out[:], k)
	return out, nil
}

// errKeysUnavailable is a key set that could not be read.
var errKeysUnavailable = errors.New("the authorization server's keys could not be read")

// keyCache keeps a verifying key set in memory and reloads it when a
// token names a key it does not hold — at most once per minReload, so
// that tokens naming made-up keys cannot make every request a load. Safe
// for concurrent use.
type keyCache struct {
	load      func(ctx context.Context) ([]jose.JSONWebKey, error)
	minReload time.Duration
	now       func() time.Time

	// loading is held by the one reload in progress; others wait for it
	// and use what it read.
	loading  sync.Mutex
	mu       sync.Mutex
	keys     map[string]jose.JSONWebKey
	loadedAt time.Time
	loaded   bool
}

func newKeyCache(load func(ctx context.Context) ([]jose.JSONWebKey, error), minReload time.Duration) *keyCache {
	return &keyCache{load: load, minReload: minReload, now: time.Now}
}

// key returns the key kid: from memory, else after a reload. A key set
// never read and unreadable is errKeysUnavailable; a kid still unknown
// after a reload is reported with found false.
func (c *keyCache) key(ctx context.Context, kid string) (jose.JSONWebKey, bool, error) {
	k, ok, stale := c.cached(kid)
	if ok || !stale {
		return k, ok, nil
	}
	c.loading.Lock()
	defer c.loading.Unlock()
	// Another request may have reloaded while this one waited.
	if k, ok, stale = c.cached(kid); ok || !stale {
		return k, ok, nil
	}
	keys, err := c.reload(ctx)
	if err != nil {
		return jose.JSONWebKey{}, false, err
	}
	k, ok = keys[kid]
	return k, ok, nil
}

// cached looks kid up in memory, and says whether the keys may be
// reloaded.
func (c *keyCache) cached(kid string) (jose.JSONWebKey, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[kid]
	return k, ok, !c.loaded || c.now().Sub(c.loadedAt) >= c.minReload
}

// all returns every key, loading them if never loaded.
func (c *keyCache) all(ctx context.Context) ([]jose.JSONWebKey, error) {
	c.mu.Lock()
	keys, loaded := c.keys, c.loaded
	c.mu.Unlock()
	if !loaded {
		c.loading.Lock()
		var err error
		keys, err = c.reload(ctx)
		c.loading.Unlock()
		if err != nil {
			return nil, err
		}
	}
	out := make([]jose.JSONWebKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return out, nil
}

func (c *keyCache) reload(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	list, err := c.load(ctx)
	if err != nil {
		c.mu.Lock()
		keys, loaded := c.keys, c.loaded
		// A failed load is not retried at once either.
		c.loadedAt = c.now()
		c.mu.Unlock()
		if loaded {
			return keys, nil
		}
		return nil, fmt.Errorf("%w: %v", errKeysUnavailable, err)
	}
	keys := make(map[string]jose.JSONWebKey, len(list))
	for _, k := range list {
		if k.KeyID != "" && (k.Use == "" || k.Use == "sig") {
			keys[k.KeyID] = k
		}
	}
	c.mu.Lock()
	c.keys, c.loadedAt, c.loaded = keys, c.now(), true
	c.mu.Unlock()
	return keys, nil
}

// storeKeys loads the issuer's verifying keys from the store.
func storeKeys(store KeyStore) func(ctx context.Context) ([]jose.JSONWebKey, error) {
	return func(ctx context.Context) ([]jose.JSONWebKey, error) {
		keys, err := store.SigningKeys(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]jose.JSONWebKey, 0, len(keys))
		for _, k := range keys {
			priv, err := parsePrivate(k)
			if err != nil {
				return nil, err
			}
			out = append(out, jose.JSONWebKey{Key: &priv.PublicKey, KeyID: k.ID, Algorithm: k.Algorithm, Use: "sig"})
		}
		return out, nil
	}
}
