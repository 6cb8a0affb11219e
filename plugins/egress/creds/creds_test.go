package creds_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress/creds"
)

const secret = "sk-test-9f8e7d6c5b4a39281706"

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestEnvCredentials(t *testing.T) {
	t.Parallel()
	env := creds.EnvCredentials{LookupEnv: lookup(map[string]string{"OPENAI_API_KEY": " " + secret + "\n", "EMPTY": ""})}
	ctx := context.Background()

	for _, ref := range []string{"OPENAI_API_KEY", "env:OPENAI_API_KEY", " env: OPENAI_API_KEY "} {
		for _, scheme := range []core.AuthScheme{core.AuthBearer, core.AuthXAPIKey, core.AuthGoogleAPIKey} {
			c, err := env.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "openai/gpt", Credential: ref}, Scheme: scheme})
			require.NoError(t, err, ref)
			require.Equal(t, secret, c.Secret, "surrounding space is trimmed")
			require.Equal(t, scheme, c.Scheme)
			require.Equal(t, "service", c.Source)
			require.NotContains(t, fmt.Sprintf("%v %+v %#v %s", c, c, c, c), secret)
		}
	}

	t.Run("unset names the variable, not a value", func(t *testing.T) {
		t.Parallel()
		for _, ref := range []string{"MISSING_KEY", "env:EMPTY"} {
			_, err := env.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "openai/gpt", Credential: ref}, Scheme: core.AuthBearer})
			require.ErrorIs(t, err, creds.ErrUnset)
			require.NotErrorIs(t, err, creds.ErrNoCredential, "a named but unset variable must not fall through a Chain")
			require.Contains(t, err.Error(), ref[len(ref)-5:])
			require.Contains(t, err.Error(), "openai/gpt")
		}
	})
	t.Run("nothing named or another source", func(t *testing.T) {
		t.Parallel()
		for _, ref := range []string{"", "byok:org-key", "vault:secret/x"} {
			_, err := env.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "e", Credential: ref}, Scheme: core.AuthBearer})
			require.ErrorIs(t, err, creds.ErrNoCredential, ref)
		}
		_, err := env.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "e", Credential: "OPENAI_API_KEY"}, Scheme: core.AuthAWSSigV4})
		require.ErrorIs(t, err, creds.ErrNoCredential)
	})
	t.Run("bad variable name", func(t *testing.T) {
		t.Parallel()
		_, err := env.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "e", Credential: "env:1-BAD"}, Scheme: core.AuthBearer})
		require.Error(t, err)
		require.NotErrorIs(t, err, creds.ErrNoCredential)
	})
}

func TestStaticCredentials(t *testing.T) {
	t.Parallel()
	s := creds.StaticCredentials{Key: secret, Keys: map[string]string{"sim/special": "special-key-123456"}}
	ctx := context.Background()

	c, err := s.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "sim/atlas"}, Scheme: core.AuthBearer})
	require.NoError(t, err)
	require.Equal(t, secret, c.Secret)
	c, err = s.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "sim/special"}, Scheme: core.AuthXAPIKey})
	require.NoError(t, err)
	require.Equal(t, "special-key-123456", c.Secret)

	_, err = s.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "sim/atlas"}, Scheme: core.AuthAWSSigV4})
	require.ErrorIs(t, err, creds.ErrNoCredential)
	_, err = creds.StaticCredentials{}.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "x"}, Scheme: core.AuthBearer})
	require.ErrorIs(t, err, creds.ErrNoCredential)

	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("creds", "static", s)
	for _, out := range []string{fmt.Sprintf("%v %+v %#v %s", s, s, s, s), logs.String()} {
		require.NotContains(t, out, secret)
		require.NotContains(t, out, "special-key-123456")
	}
}

// staticProvider answers with a fixed credential or error.
type staticProvider struct {
	cred *core.Credential
	err  error
}

func (p staticProvider) Credential(context.Context, *core.CredentialRequest) (*core.Credential, error) {
	return p.cred, p.err
}

func TestChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := &core.CredentialRequest{Engine: &core.Engine{ID: "openai/gpt"}, Scheme: core.AuthBearer, OrgID: "org_1"}
	byok := &core.Credential{Scheme: core.AuthBearer, Secret: "byok-key-0000000", Source: "byok"}
	none := staticProvider{err: fmt.Errorf("org has no key: %w", creds.ErrNoCredential)}
	service := creds.StaticCredentials{Key: secret}

	c, err := creds.Chain{staticProvider{cred: byok}, service}.Credential(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "byok", c.Source, "the first provider wins")

	c, err = creds.Chain{none, nil, service}.Credential(ctx, req)
	require.NoError(t, err)
	require.Equal(t, secret, c.Secret, "ErrNoCredential falls through")

	broken := errors.New("byok store unreachable")
	_, err = creds.Chain{staticProvider{err: broken}, service}.Credential(ctx, req)
	require.ErrorIs(t, err, broken, "other errors stop the chain")

	_, err = creds.Chain{none}.Credential(ctx, req)
	require.ErrorIs(t, err, creds.ErrNoCredential)
	require.Contains(t, err.Error(), "openai/gpt")

	_, err = creds.Chain{staticProvider{}}.Credential(ctx, req)
	require.Error(t, err, "a nil credential without an error is an error")
}

func TestServiceCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	aws := &core.Credential{Scheme: core.AuthAWSSigV4, AWS: &core.AWSCredential{AccessKeyID: "ASIA1"}, Source: "service"}
	s := creds.ServiceCredentials{APIKeys: creds.StaticCredentials{Key: secret}, AWS: staticProvider{cred: aws}}
	eng := &core.Engine{ID: "e"}

	for _, scheme := range []core.AuthScheme{core.AuthBearer, core.AuthXAPIKey, core.AuthGoogleAPIKey} {
		c, err := s.Credential(ctx, &core.CredentialRequest{Engine: eng, Scheme: scheme})
		require.NoError(t, err)
		require.Equal(t, secret, c.Secret)
	}
	c, err := s.Credential(ctx, &core.CredentialRequest{Engine: eng, Scheme: core.AuthAWSSigV4})
	require.NoError(t, err)
	require.Same(t, aws, c)
	c, err = s.Credential(ctx, &core.CredentialRequest{Engine: eng, Scheme: core.AuthNone})
	require.NoError(t, err)
	require.Empty(t, c.Secret)

	_, err = creds.ServiceCredentials{}.Credential(ctx, &core.CredentialRequest{Engine: eng, Scheme: core.AuthAWSSigV4})
	require.ErrorIs(t, err, creds.ErrNoCredential)
	_, err = s.Credential(ctx, &core.CredentialRequest{Engine: eng, Scheme: "kerberos"})
	require.Error(t, err)
	_, err = creds.ServiceCredentials{}.Credential(ctx, &core.CredentialRequest{Engine: &core.Engine{ID: "e", Credential: "CONCLAVE_TEST_SURELY_UNSET_VAR"}, Scheme: core.AuthBearer})
	require.ErrorIs(t, err, creds.ErrUnset, "API keys default to the environment")
}

func TestEnvBaseCredentials(t *testing.T) {
	t.Parallel()
	_, err := creds.EnvBaseCredentials(lookup(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA1"}))
	require.ErrorIs(t, err, creds.ErrUnset)
	require.Contains(t, err.Error(), "AWS_SECRET_ACCESS_KEY")

	p, err := creds.EnvBaseCredentials(lookup(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": secret}))
	require.NoError(t, err)
	v, err := p.Retrieve(context.Background())
	require.NoError(t, err)
	require.Equal(t, "AKIA1", v.AccessKeyID)
	require.Equal(t, secret, v.SecretAccessKey)
}

// ExampleChain puts a bring-your-own-key lookup in front of the service's
// own credentials: an organisation's key wins, and organisations without
// one fall back to the service's.
func ExampleChain() {
	byok := staticProvider{err: fmt.Errorf("org_42 has no key of its own: %w", creds.ErrNoCredential)}
	service := creds.ServiceCredentials{APIKeys: creds.StaticCredentials{Key: "sim-key-not-secret"}}
	var credentials core.Credentials = creds.Chain{byok, service}

	c, err := credentials.Credential(context.Background(), &core.CredentialRequest{
		Engine: &core.Engine{ID: "sim/atlas"}, Scheme: core.AuthBearer, OrgID: "org_42",
	})
	fmt.Println(c, err)
	// Output: credential(bearer, service) <nil>
}
