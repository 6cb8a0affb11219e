package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrClientMetadata is client metadata that cannot be accepted: RFC 7591's
// invalid_client_metadata (a redirect URI's own problem is
// ErrRedirectURI: invalid_redirect_uri).
var ErrClientMetadata = errors.New("invalid client metadata")

// Limits of client metadata.
const (
	maxRedirects = 10
	maxNameLen   = 200
)

// ClientMetadata is what a client says of itself, in a Client ID Metadata
// Document or a registration request (RFC 7591 §2): the fields Conclave
// reads; others are ignored.
type ClientMetadata struct {
	ClientID     string   `json:"client_id,omitempty"`
	ClientName   string   `json:"client_name,omitempty"`
	ClientURI    string   `json:"client_uri,omitempty"`
	LogoURI      string   `json:"logo_uri,omitempty"`
	RedirectURIs []string `json:"redirect_uris"`
	// GrantTypes and ResponseTypes default to authorization_code and code.
	GrantTypes    []string `json:"grant_types,omitempty"`
	ResponseTypes []string `json:"response_types,omitempty"`
	// AuthMethods is token_endpoint_auth_method, which some documents give
	// as a list (ChatGPT's: ["none","private_key_jwt"]).
	AuthMethods Strings `json:"token_endpoint_auth_method,omitempty"`
	Scope       string  `json:"scope,omitempty"`
}

// Strings is a JSON member given as one string or a list of them
// (token_endpoint_auth_method in some documents — ChatGPT's
// ["none","private_key_jwt"] — and a JWT's aud): it reads either, and
// writes one value as a string (what clients expect of a registration
// response) and several as a list.
type Strings []string

func (a Strings) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

func (a *Strings) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("neither a string nor a list of strings")
	}
	*a = many
	return nil
}

// Client is a client's metadata as accepted: public (no secret), with its
// redirect URIs checked.
type Client struct {
	ClientMetadata
	// Native is true when every redirect URI is a loopback or private-use
	// one: the consent page warns that such an app's identity is only its
	// own word.
	Native bool
}

// CheckMetadata accepts m as a public client's metadata, or says what is
// wrong with it. Conclave serves public clients only (PKCE, no secret):
// the auth method must be absent or list "none" (a document that also
// lists private_key_jwt is taken as public). The grant types must include
// authorization_code (refresh_token may be absent: clients that omit it
// are still served), and the response types code. Every redirect URI must
// pass CheckRedirectURI.
func CheckMetadata(m *ClientMetadata) (*Client, error) {
	if len(m.RedirectURIs) == 0 {
		return nil, fmt.Errorf("%w: redirect_uris is required", ErrClientMetadata)
	}
	if len(m.RedirectURIs) > maxRedirects {
		return nil, fmt.Errorf("%w: at most %d redirect_uris", ErrClientMetadata, maxRedirects)
	}
	if len(m.ClientName) > maxNameLen || strings.ContainsAny(m.ClientName, "\x00\r\n") {
		return nil, fmt.Errorf("%w: client_name is too long or holds control characters", ErrClientMetadata)
	}
	if len(m.AuthMethods) > 0 && !slices.Contains(m.AuthMethods, "none") {
		return nil, fmt.Errorf("%w: only public clients are served: token_endpoint_auth_method must be none", ErrClientMetadata)
	}
	if len(m.GrantTypes) > 0 && !slices.Contains(m.GrantTypes, "authorization_code") {
		return nil, fmt.Errorf("%w: grant_types must include authorization_code", ErrClientMetadata)
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, fmt.Errorf("%w: the grant type %q is not served", ErrClientMetadata, g)
		}
	}
	if len(m.ResponseTypes) > 0 && !slices.Contains(m.ResponseTypes, "code") {
		return nil, fmt.Errorf("%w: response_types must include code", ErrClientMetadata)
	}
	c := &Client{ClientMetadata: *m, Native: true}
	c.AuthMethods = Strings{"none"}
	for _, r := range m.RedirectURIs {
		kind, err := CheckRedirectURI(r)
		if err != nil {
			return nil, err
		}
		if kind == RedirectWeb {
			c.Native = false
		}
	}
	return c, nil
}
