// Package byok is bring-your-own-key: an organisation's own provider
// credentials, used for its seat calls instead of the service's.
//
// Four provider families take an API key (openai, anthropic, google,
// mistral); the key is sealed at rest with AES-256-GCM under a key from the
// environment (Sealer, CONCLAVE_BYOK_KEY), bound to its organisation and
// provider. The fifth, aws, is a cross-account role (role ARN and external
// id) that the service assumes per request with STS; nothing long-lived is
// stored for it.
//
// Credentials plugs the stored credentials into the egress layer as a
// core.Credentials that answers only calls naming an organisation (seat
// calls; judge, synthesis and classifier calls never do) and falls back to
// the service's credentials, through creds.Chain, when the organisation has
// none for the engine's provider. Calls it serves carry the source
// core.SourceBYOK(provider), which billing reads: no token charge, and the
// 0.5% fee on the real cost.
//
// The providers (core.BYOKProviders) and the stored form
// (core.ProviderCredential) are core's, and storage implements
// core.ProviderCredentials; this package checks and seals what an owner
// registers (NewKeyCredential, NewRoleCredential) and opens it on the call
// path.
package byok

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// familyProvider maps a lower-cased engine family to its provider.
var familyProvider = map[string]string{
	"openai":    core.ProviderOpenAI,
	"anthropic": core.ProviderAnthropic,
	"google":    core.ProviderGoogle,
	"gemini":    core.ProviderGoogle,
	"mistral":   core.ProviderMistral,
}

// ProviderFor is the provider whose credential serves a call to engine e
// under scheme: aws for an engine signed with SigV4 (Bedrock, whatever model
// family it hosts); for an API-key scheme, the engine's family (openai,
// anthropic, google — also spelt gemini — or mistral, case-insensitive; a
// simulated family "sim-openai" counts as "openai"). A Mistral engine served
// through the OpenAI-compatible adapter has family mistral and takes the
// mistral key. Any other engine or scheme has none.
func ProviderFor(e *core.Engine, scheme core.AuthScheme) (string, bool) {
	if e == nil {
		return "", false
	}
	switch scheme {
	case core.AuthAWSSigV4:
		return core.ProviderAWS, true
	case core.AuthBearer, core.AuthXAPIKey, core.AuthGoogleAPIKey:
	default:
		return "", false
	}
	f := strings.ToLower(strings.TrimSpace(e.Family))
	f = strings.TrimPrefix(f, "sim-")
	p, ok := familyProvider[f]
	return p, ok
}

// Hint is the last four characters of s.
func Hint(s string) string {
	r := []rune(s)
	if len(r) <= 4 {
		return ""
	}
	return string(r[len(r)-4:])
}

// Key lengths accepted. Real keys run from 32 (Mistral) to about 200
// characters.
const (
	minKeyLen = 16
	maxKeyLen = 1024
)

// CheckAPIKey checks that key looks like a provider API key: 16 to 1024
// printable ASCII characters without spaces, as an HTTP header can carry.
// Its error never repeats the key.
func CheckAPIKey(key string) error {
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return fmt.Errorf("the key is %d characters long; a provider key has %d to %d", len(key), minKeyLen, maxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			return errors.New("the key holds a space, a control or a non-ASCII character")
		}
	}
	return nil
}

var (
	roleARNRe    = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}$`)
	externalIDRe = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
)

// CheckRole checks an AWS role ARN and its external id, which is required:
// it is what stops another customer naming the same role (the confused
// deputy).
func CheckRole(roleARN, externalID string) error {
	if !roleARNRe.MatchString(roleARN) {
		return fmt.Errorf("%q is not an IAM role ARN (arn:aws:iam::123456789012:role/name)", roleARN)
	}
	if len(externalID) < 2 || len(externalID) > 1224 || !externalIDRe.MatchString(externalID) {
		return errors.New("the external id must be 2 to 1224 characters of letters, digits and +=,.@:/-_")
	}
	return nil
}

// NewKeyCredential checks key and seals it for (orgID, provider), an
// API-key provider.
func NewKeyCredential(s *Sealer, orgID, provider, key string) (*core.ProviderCredential, error) {
	if !core.ValidBYOKProvider(provider) || provider == core.ProviderAWS {
		return nil, fmt.Errorf("byok: %q is not an API-key provider (openai, anthropic, google, mistral)", provider)
	}
	if err := CheckAPIKey(key); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNoKey
	}
	sealed, keyID, err := s.Seal(orgID, provider, []byte(key))
	if err != nil {
		return nil, err
	}
	return &core.ProviderCredential{OrgID: orgID, Provider: provider, Sealed: sealed, KeyID: keyID, Hint: Hint(key)}, nil
}

// NewRoleCredential checks an AWS role for orgID.
func NewRoleCredential(orgID, roleARN, externalID string) (*core.ProviderCredential, error) {
	if err := CheckRole(roleARN, externalID); err != nil {
		return nil, err
	}
	return &core.ProviderCredential{
		OrgID:      orgID,
		Provider:   core.ProviderAWS,
		RoleARN:    roleARN,
		ExternalID: externalID,
		Hint:       Hint(externalID),
	}, nil
}

// Maker makes the stored form of credentials with one sealer: the people
// service's core/people.CredentialMaker, so that the pages check and seal
// exactly as the operator's CLI does.
type Maker struct {
	Sealer *Sealer
}

// NewKeyCredential is NewKeyCredential with m's sealer.
func (m Maker) NewKeyCredential(orgID, provider, key string) (*core.ProviderCredential, error) {
	return NewKeyCredential(m.Sealer, orgID, provider, key)
}

// NewRoleCredential is NewRoleCredential.
func (Maker) NewRoleCredential(orgID, roleARN, externalID string) (*core.ProviderCredential, error) {
	return NewRoleCredential(orgID, roleARN, externalID)
}
