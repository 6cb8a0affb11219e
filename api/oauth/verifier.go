package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// leeway is the clock difference tolerated on exp and nbf.
const leeway = 5 * time.Second

// maxTokenLen bounds a token the Verifier parses.
const maxTokenLen = 16 << 10

// Verifier verifies connected apps' access tokens in-process: the
// signature by the issuer's keys (held in memory, reloaded when a token
// names a key they lack), iss, aud (it must contain the resource,
// {public_url}/mcp), exp and nbf. It does not ask whether the grant still
// stands: core/access does, briefly cached. Safe for concurrent use.
type Verifier struct {
	issuer   string
	audience string
	keys     *keyCache
	algs     []string
	now      func() time.Time
	// own is true for the embedded server's tokens: they must carry the
	// grant, the organisation and the client.
	own bool
}

// claims are the claims read from an access token.
type claims struct {
	Issuer    string            `json:"iss"`
	Subject   string            `json:"sub"`
	Audience  coreoauth.Strings `json:"aud"`
	Expiry    *float64          `json:"exp"`
	NotBefore *float64          `json:"nbf"`
	ClientID  string            `json:"client_id"`
	AZP       string            `json:"azp"`
	Scope     string            `json:"scope"`
	SCP       []string          `json:"scp"`
	OrgID     string            `json:"org_id"`
	GrantID   string            `json:"grant_id"`
	Email     string            `json:"email"`
	// EmailVerified is the issuer's word that Email is the person's.
	EmailVerified *bool `json:"email_verified"`
}

// invalid is the refusal of a token that failed verification.
func invalid(why string) *core.Error {
	return core.Errorf(core.CodeInvalidOAuthToken, "The access token is not valid: %s. Sign in again.", why)
}

func unavailable(err error) *core.Error {
	return core.Errorf(core.CodeOAuthUnavailable,
		"The authorization server's keys could not be read, so the access token could not be checked. Retry shortly.").WithCause(err)
}

// VerifyToken checks token and returns what it grants. A token that fails
// any check is a *core.Error invalid_oauth_token (401); one that could not
// be checked because the keys could not be read, oauth_unavailable (503).
func (v *Verifier) VerifyToken(ctx context.Context, token string) (*coreoauth.Token, error) {
	if len(token) > maxTokenLen || strings.Count(token, ".") != 2 {
		return nil, invalid("it is not a signed JWT")
	}
	algs := make([]jose.SignatureAlgorithm, len(v.algs))
	for i, a := range v.algs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	jws, err := jose.ParseSignedCompact(token, algs)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, invalid("it is not a JWT signed with " + strings.Join(v.algs, " or "))
	}
	kid := jws.Signatures[0].Header.KeyID
	key, found, err := v.keys.key(ctx, kid)
	if err != nil {
		return nil, unavailable(err)
	}
	if !found {
		return nil, invalid("it is signed with a key the issuer does not have")
	}
	payload, err := jws.Verify(&key)
	if err != nil {
		return nil, invalid("its signature does not verify")
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, invalid("its claims are not readable")
	}
	now := v.now()
	switch {
	case c.Issuer != v.issuer:
		return nil, invalid("it was issued by another authorization server")
	case !slices.Contains(c.Audience, v.audience):
		return nil, invalid("it is not for this server (its audience is not " + v.audience + ")")
	case c.Expiry == nil:
		return nil, invalid("it has no expiry")
	case !now.Before(unixTime(*c.Expiry).Add(leeway)):
		return nil, invalid("it expired")
	case c.NotBefore != nil && now.Add(leeway).Before(unixTime(*c.NotBefore)):
		return nil, invalid("it is not valid yet")
	case c.Subject == "":
		return nil, invalid("it names no subject")
	}
	t := &coreoauth.Token{PersonID: c.Subject, OrgID: c.OrgID, GrantID: c.GrantID, ClientID: cmpOr(c.ClientID, c.AZP),
		Scopes: scopesOf(&c), Expires: unixTime(*c.Expiry), Issuer: c.Issuer}
	if v.own {
		if t.GrantID == "" || t.OrgID == "" || t.ClientID == "" {
			return nil, invalid("it is not an access token of this server (no grant, organisation or client)")
		}
		return t, nil
	}
	// Another server's token: core/access finds its person and
	// organisation.
	t.External, t.GrantID = true, ""
	if c.EmailVerified != nil && *c.EmailVerified {
		t.Email = core.NormalEmail(c.Email)
	}
	return t, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// unixTime is a NumericDate, clamped to years 1970 to about 33658.
func unixTime(f float64) time.Time {
	f = math.Max(0, math.Min(f, 1e12))
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// scopesOf are the token's scopes Conclave knows (scope, or scp as some
// issuers write it), offline_access left out.
func scopesOf(c *claims) []string {
	asked := strings.Fields(c.Scope)
	asked = append(asked, c.SCP...)
	var out []string
	for _, s := range core.AllScopes {
		if slices.Contains(asked, s) {
			out = append(out, s)
		}
	}
	return out
}

// ExternalConfig configures a Verifier of another authorization server's
// tokens (auth.authorization_servers).
type ExternalConfig struct {
	// Issuer is the other server's issuer, as its metadata names it.
	// Required.
	Issuer string
	// Audience is the resource its tokens must be for: {public_url}/mcp.
	// Required.
	Audience string
	// Client fetches the metadata and the key set. Defaults to a client
	// with a 10s timeout.
	Client *http.Client
	// MinReload is how often, at most, an unknown key id reloads the key
	// set. Defaults to 30s.
	MinReload time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// NewExternalVerifier returns a Verifier of tokens an external
// authorization server issues, checked by its published key set
// (jwks_uri, found in its RFC 8414 metadata, else its OpenID Connect
// discovery document; RS*, PS*, ES* or EdDSA) with the same iss, aud, exp
// and nbf rules. The Token it returns is External, with no grant of this
// server: PersonID is the token's sub, Email its email claim when its
// email_verified claim is true, OrgID its org_id claim. core/access takes
// the sub for a Conclave person's id, else the email for a Conclave
// person's email, and the org_id, else the person's only organisation —
// the issuer must be configured to put one of them in its access tokens.
// Nothing is fetched until the first token.
func NewExternalVerifier(cfg ExternalConfig) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("oauth: an external verifier needs Issuer and Audience")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.MinReload <= 0 {
		cfg.MinReload = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	issuer := strings.TrimRight(cfg.Issuer, "/")
	j := &remoteJWKS{issuer: issuer, client: cfg.Client}
	return &Verifier{issuer: cfg.Issuer, audience: cfg.Audience, keys: newKeyCache(j.load, cfg.MinReload),
		algs: []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"},
		now:  cfg.Now}, nil
}

// remoteJWKS loads an external issuer's key set, discovering its URL once.
// Safe for concurrent use.
type remoteJWKS struct {
	issuer string
	client *http.Client

	mu   sync.Mutex
	jwks string
}

// maxDocument caps a fetched metadata document or key set.
const maxDocument = 1 << 20

func (j *remoteJWKS) load(ctx context.Context) ([]jose.JSONWebKey, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.jwks == "" {
		for _, p := range []string{PathMetadata, PathOpenIDMetadata} {
			var m struct {
				Issuer  string `json:"issuer"`
				JWKSURI string `json:"jwks_uri"`
			}
			if err := j.get(ctx, j.issuer+p, &m); err != nil || m.JWKSURI == "" {
				continue
			}
			j.jwks = m.JWKSURI
			break
		}
		if j.jwks == "" {
			return nil, fmt.Errorf("%s publishes no jwks_uri in its metadata", j.issuer)
		}
	}
	var set jose.JSONWebKeySet
	if err := j.get(ctx, j.jwks, &set); err != nil {
		return nil, err
	}
	return set.Keys, nil
}

func (j *remoteJWKS) get(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := j.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxDocument))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// Verifiers checks the tokens of several authorization servers
// (auth.authorization_servers), by issuer: a token goes to the verifier of
// the issuer it names — read before verification only to choose; that
// verifier checks the claim again with the signature. A token naming none
// of them is invalid_oauth_token.
type Verifiers map[string]*Verifier

// NewExternalVerifiers returns a Verifiers of each of issuers, with cfg's
// other settings (cfg.Issuer is ignored).
func NewExternalVerifiers(issuers []string, cfg ExternalConfig) (Verifiers, error) {
	vs := Verifiers{}
	for _, iss := range issuers {
		c := cfg
		c.Issuer = iss
		v, err := NewExternalVerifier(c)
		if err != nil {
			return nil, err
		}
		vs[iss] = v
	}
	return vs, nil
}

// VerifyToken implements access.TokenVerifier.
func (vs Verifiers) VerifyToken(ctx context.Context, token string) (*coreoauth.Token, error) {
	v, ok := vs[unverifiedIssuer(token)]
	if !ok {
		return nil, invalid("it was issued by an authorization server this server does not trust")
	}
	return v.VerifyToken(ctx, token)
}

// unverifiedIssuer is the iss claim of a compact JWS, unchecked; "" when
// it has none or is not one.
func unverifiedIssuer(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 16<<10 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return ""
	}
	return c.Issuer
}
