package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Bring-your-own-key providers: what an organisation can register a
// credential of its own for. The first four take an API key; aws is a role
// in the organisation's AWS account. A call's source names the provider
// (SourceBYOK).
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderGoogle    = "google"
	ProviderMistral   = "mistral"
	ProviderAWS       = "aws"
)

// BYOKProviders lists every bring-your-own-key provider, API-key providers
// first: the order in which ProviderCredentials lists an organisation's
// credentials.
var BYOKProviders = []string{ProviderOpenAI, ProviderAnthropic, ProviderGoogle, ProviderMistral, ProviderAWS}

// ValidBYOKProvider reports whether p is one of BYOKProviders.
func ValidBYOKProvider(p string) bool {
	switch p {
	case ProviderOpenAI, ProviderAnthropic, ProviderGoogle, ProviderMistral, ProviderAWS:
		return true
	}
	return false
}

// MinSealedLen is the length of the shortest sealed secret: AES-GCM's
// 12-byte nonce and 16-byte tag around an empty plaintext. Sealing and
// opening are plugins/byok's; the store only refuses what cannot be one.
const MinSealedLen = 12 + 16

// ProviderCredential is one organisation's stored credential for one
// bring-your-own-key provider. For an API-key provider Sealed and KeyID are
// set; for aws, RoleARN and ExternalID. It never holds a plaintext key.
type ProviderCredential struct {
	OrgID    string
	Provider string // one of BYOKProviders
	// Sealed is the API key sealed for (OrgID, Provider): a nonce, then
	// the ciphertext and its tag (plugins/byok's Sealer). KeyID names the
	// sealing key. Both empty for aws, and in listings.
	Sealed []byte
	KeyID  string
	// RoleARN and ExternalID are the organisation's role (aws only).
	RoleARN    string
	ExternalID string
	// Hint is the last four characters of the API key, or of the external
	// id, for the owner to recognise it.
	Hint      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Validate checks the credential's shape, as the store requires it: an
// organisation and a known provider; for aws a role ARN and an external id
// with no sealed key; for an API-key provider a sealed key (at least
// MinSealedLen bytes) and its key id, with no role. It does not check that
// the role or the key would be accepted by the provider.
func (c *ProviderCredential) Validate() error {
	switch {
	case c == nil || c.OrgID == "" || !ValidBYOKProvider(c.Provider):
		return errors.New("a provider credential needs an organisation and a known provider")
	case c.Provider == ProviderAWS:
		if c.RoleARN == "" || c.ExternalID == "" || len(c.Sealed) > 0 {
			return errors.New("an aws credential is a role ARN and an external id, with no sealed key")
		}
	case len(c.Sealed) < MinSealedLen || c.KeyID == "" || c.RoleARN != "" || c.ExternalID != "":
		return fmt.Errorf("a %s credential is a sealed key and its key id, with no role", c.Provider)
	}
	return nil
}

// String names the credential without its sealed key or external id.
func (c *ProviderCredential) String() string {
	if c == nil {
		return "ProviderCredential(nil)"
	}
	return fmt.Sprintf("ProviderCredential(%s, %s, …%s)", c.OrgID, c.Provider, c.Hint)
}

// GoString is String.
func (c *ProviderCredential) GoString() string { return c.String() }

// ProviderCredentials holds organisations' own provider credentials
// (bring-your-own-key), at most one per organisation and provider. It moves
// sealed keys and roles only: it never sees a plaintext key. Every read is
// scoped by organisation: another organisation's credential is as absent
// as one never stored. Its methods are safe for concurrent use.
type ProviderCredentials interface {
	// SetProviderCredential stores c, replacing the organisation's
	// credential for the provider if it had one (its CreatedAt is kept,
	// UpdatedAt moves on). A credential that fails c.Validate is refused
	// with an error; one for an organisation that does not exist returns
	// ErrNotFound. The result is what was stored, without the sealed key.
	SetProviderCredential(ctx context.Context, c *ProviderCredential) (*ProviderCredential, error)
	// ListProviderCredentials returns the organisation's credentials in
	// the order of BYOKProviders, without sealed keys. An organisation with
	// none, or that does not exist, has an empty list.
	ListProviderCredentials(ctx context.Context, orgID string) ([]*ProviderCredential, error)
	// LookupProviderCredential returns the organisation's credential for
	// one provider, sealed key included, for the call path. None — never
	// stored, removed, or another organisation's — returns ErrNotFound.
	LookupProviderCredential(ctx context.Context, orgID, provider string) (*ProviderCredential, error)
	// RemoveProviderCredential deletes the organisation's credential for
	// the provider; none returns ErrNotFound.
	RemoveProviderCredential(ctx context.Context, orgID, provider string) error
	// AnyProviderCredentials reports whether any organisation has a
	// credential stored, so that a server without the sealing key can say
	// what it is not using.
	AnyProviderCredentials(ctx context.Context) (bool, error)
}

// ProviderTest is what a test of an organisation's own provider
// credential found: one short real call, through the egress layer.
type ProviderTest struct {
	// OK is true when the engine answered on the organisation's own
	// credential; otherwise Problem says what went wrong, in words.
	OK      bool
	Engine  string
	Latency time.Duration
	Problem string
}
