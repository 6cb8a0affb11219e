package peopletest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// The options a page passes to the browser: the relying party is the
// public URL's host, the passkey must be discoverable, user verification
// is preferred, and a person's existing passkeys are excluded. (The
// ceremonies themselves run end to end in a browser, in api/web.)
func TestPasskeyOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{PublicURL: "https://conclave.example.com:8443"})
	require.Equal(t, "https://conclave.example.com:8443", b.svc.Origin())

	type options struct {
		PublicKey struct {
			RP struct {
				ID string `json:"id"`
			} `json:"rp"`
			RPID string `json:"rpId"`
			User struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"user"`
			Challenge string `json:"challenge"`
			Selection struct {
				ResidentKey        string `json:"residentKey"`
				RequireResidentKey bool   `json:"requireResidentKey"`
				UserVerification   string `json:"userVerification"`
			} `json:"authenticatorSelection"`
			UserVerification string `json:"userVerification"`
			Exclude          []struct {
				ID string `json:"id"`
			} `json:"excludeCredentials"`
			Allow []struct{} `json:"allowCredentials"`
		} `json:"publicKey"`
	}
	parse := func(c *people.Ceremony) options {
		var o options
		require.NoError(t, json.Unmarshal(c.Options, &o))
		require.NotEmpty(t, o.PublicKey.Challenge)
		require.Len(t, c.Secret, 43)
		return o
	}

	c, err := b.svc.BeginAddPasskey(ctx, b.member)
	require.NoError(t, err)
	o := parse(c)
	require.Equal(t, "conclave.example.com", o.PublicKey.RP.ID, "the host without its port")
	require.Equal(t, base64.RawURLEncoding.EncodeToString([]byte(b.member.Person.ID)), o.PublicKey.User.ID, "the user handle is the person's id")
	require.Equal(t, "mia@acme.example", o.PublicKey.User.Name)
	require.Equal(t, "required", o.PublicKey.Selection.ResidentKey)
	require.True(t, o.PublicKey.Selection.RequireResidentKey)
	require.Equal(t, "preferred", o.PublicKey.Selection.UserVerification)
	require.Empty(t, o.PublicKey.Exclude)

	credID := randomBytes(16)
	raw, err := json.Marshal(webauthn.Credential{ID: credID})
	require.NoError(t, err)
	_, err = b.store.AddPasskey(core.WithActor(ctx, b.member.Actor()), &core.Passkey{PersonID: b.member.Person.ID, CredentialID: credID,
		Name: "Laptop", Credential: raw})
	require.NoError(t, err)
	c, err = b.svc.BeginAddPasskey(ctx, b.member)
	require.NoError(t, err)
	o = parse(c)
	require.Len(t, o.PublicKey.Exclude, 1)
	require.Equal(t, base64.RawURLEncoding.EncodeToString(credID), o.PublicKey.Exclude[0].ID, "the passkey already registered is excluded")

	// Sign-in is discoverable: no email, no list of credentials.
	c, err = b.svc.BeginPasskeySignIn(ctx, "203.0.113.21")
	require.NoError(t, err)
	o = parse(c)
	require.Equal(t, "conclave.example.com", o.PublicKey.RPID)
	require.Empty(t, o.PublicKey.Allow)
	require.Equal(t, "preferred", o.PublicKey.UserVerification)

	// A response that is not an assertion is refused, and the ceremony is
	// single-use.
	_, err = b.svc.FinishPasskeySignIn(ctx, c.Secret, []byte(`{"id":"x"}`), "203.0.113.21")
	require.Equal(t, "passkey", fieldOf(t, err))
	_, err = b.svc.FinishPasskeySignIn(ctx, c.Secret, []byte(`{"id":"x"}`), "203.0.113.21")
	require.Equal(t, "passkey", fieldOf(t, err))
	require.Contains(t, err.Error(), "expired or was already used")
	_, err = b.svc.FinishPasskeySignIn(ctx, "forged", []byte(`{}`), "203.0.113.21")
	require.Equal(t, "passkey", fieldOf(t, err))

	// A ceremony of one kind cannot finish another.
	c, err = b.svc.BeginPasskeySignIn(ctx, "203.0.113.21")
	require.NoError(t, err)
	_, err = b.svc.FinishAddPasskey(ctx, b.member, c.Secret, []byte(`{}`), "Phone")
	require.Equal(t, "passkey", fieldOf(t, err))

	// The last way to sign in cannot be removed; with a password it can.
	pks, err := b.svc.Passkeys(ctx, b.member)
	require.NoError(t, err)
	require.Len(t, pks, 1)
	require.NoError(t, b.svc.RemovePasskey(ctx, b.member, pks[0].ID), "Mia also has a password")
	pks, err = b.svc.Passkeys(ctx, b.member)
	require.NoError(t, err)
	require.Empty(t, pks)
}

// The relying party follows the public URL, and the configuration is
// checked.
func TestNewChecksItsConfiguration(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	d := people.Deps{Store: b.store, Orgs: b.store, Keys: b.store, Access: b.acc}
	for url, want := range map[string]string{
		"":                     "PublicURL is required",
		"localhost:8080":       "PublicURL",
		"ftp://files.example":  "PublicURL",
		"https://":             "PublicURL",
		"http://localhost:80x": "PublicURL",
	} {
		_, err := people.New(people.Config{PublicURL: url}, d)
		require.ErrorContains(t, err, want, url)
	}
	_, err := people.New(people.Config{PublicURL: "http://localhost:8080", SessionIdle: time.Hour, SessionMaxAge: time.Minute}, d)
	require.ErrorContains(t, err, "SessionMaxAge")
	_, err = people.New(people.Config{PublicURL: "http://localhost:8080", MaxConcurrentHashes: -1}, d)
	require.ErrorContains(t, err, "MaxConcurrentHashes")
	_, err = people.New(people.Config{PublicURL: "http://localhost:8080"}, people.Deps{Store: b.store})
	require.ErrorContains(t, err, "Access")

	s, err := people.New(people.Config{PublicURL: "http://localhost:8080/ignored/path"}, d)
	require.NoError(t, err)
	require.Equal(t, "http://localhost:8080", s.Origin())
	cfg := s.Config()
	require.Equal(t, 12*time.Hour, cfg.SessionIdle)
	require.Equal(t, 7*24*time.Hour, cfg.SessionMaxAge)
	require.Equal(t, 7*24*time.Hour, cfg.LinkTTL)
	require.Equal(t, 2, cfg.MaxConcurrentHashes)
	require.Equal(t, people.DefaultArgon2, cfg.Argon2)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// A passkey sign-in names no account, so its attempts count against the
// client address: past the address's budget a finish is refused before
// the ceremony is even read.
func TestPasskeySignInSpendsTheAddressBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{AddressAttempts: 2, AccountAttempts: 100})
	for range 2 {
		_, err := b.svc.FinishPasskeySignIn(ctx, "forged", []byte(`{}`), "203.0.113.40")
		require.Equal(t, "passkey", fieldOf(t, err))
	}
	c, err := b.svc.BeginPasskeySignIn(ctx, "203.0.113.40")
	require.NoError(t, err)
	_, err = b.svc.FinishPasskeySignIn(ctx, c.Secret, []byte(`{}`), "203.0.113.40")
	require.Equal(t, core.CodeRateLimitExceeded, code(t, err))
	_, err = b.svc.FinishPasskeySignIn(ctx, c.Secret, []byte(`{}`), "203.0.113.41")
	require.Equal(t, "passkey", fieldOf(t, err), "another address has its own budget, and the ceremony was not spent")
	require.NotContains(t, err.Error(), "already used")
}
