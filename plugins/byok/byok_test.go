package byok_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/egress/creds"
	"github.com/conclavehq/conclave/plugins/egress/egresstest"
)

func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

func newSealer(t testing.TB, previous ...[]byte) *byok.Sealer {
	t.Helper()
	s, err := byok.NewSealer(newKey(t), previous...)
	require.NoError(t, err)
	return s
}

const apiKey = "sk-proj-0123456789abcdefghijklmnopqrstuvwxyz-WXYZ"

func TestSealOpensOnlyForItsRow(t *testing.T) {
	t.Parallel()
	s := newSealer(t)
	sealed, keyID, err := s.Seal("org_a", "openai", []byte(apiKey))
	require.NoError(t, err)
	require.Equal(t, s.KeyID(), keyID)
	require.Len(t, sealed, 12+len(apiKey)+16, "nonce || ciphertext || tag")
	empty, _, err := s.Seal("org_a", "openai", nil)
	require.NoError(t, err)
	require.Len(t, empty, core.MinSealedLen, "the shortest sealed secret is the one the store accepts")
	require.False(t, bytes.Contains(sealed, []byte(apiKey)))
	require.False(t, bytes.Contains(sealed, []byte("WXYZ")))

	again, _, err := s.Seal("org_a", "openai", []byte(apiKey))
	require.NoError(t, err)
	require.NotEqual(t, sealed, again, "a fresh nonce each time")

	got, err := s.Open("org_a", "openai", keyID, sealed)
	require.NoError(t, err)
	require.Equal(t, apiKey, string(got))

	_, err = s.Open("org_b", "openai", keyID, sealed)
	require.ErrorIs(t, err, byok.ErrOpen, "a row copied to another organisation does not open")
	_, err = s.Open("org_a", "anthropic", keyID, sealed)
	require.ErrorIs(t, err, byok.ErrOpen, "nor under another provider")
	tampered := bytes.Clone(sealed)
	tampered[20] ^= 1
	_, err = s.Open("org_a", "openai", keyID, tampered)
	require.ErrorIs(t, err, byok.ErrOpen)
	_, err = s.Open("org_a", "openai", keyID, sealed[:10])
	require.ErrorIs(t, err, byok.ErrOpen)

	other := newSealer(t)
	_, err = other.Open("org_a", "openai", keyID, sealed)
	require.ErrorIs(t, err, byok.ErrOpen, "another key does not open it")
	require.NotContains(t, err.Error(), apiKey)
}

func TestRotationOpensWithThePreviousKey(t *testing.T) {
	t.Parallel()
	oldKey := newKey(t)
	old, err := byok.NewSealer(oldKey)
	require.NoError(t, err)
	sealed, oldID, err := old.Seal("org_a", "mistral", []byte(apiKey))
	require.NoError(t, err)

	rotated := newSealer(t, oldKey)
	require.NotEqual(t, oldID, rotated.KeyID(), "new secrets are sealed with the new key")
	got, err := rotated.Open("org_a", "mistral", oldID, sealed)
	require.NoError(t, err)
	require.Equal(t, apiKey, string(got))
	_, newID, err := rotated.Seal("org_a", "mistral", got)
	require.NoError(t, err)
	require.Equal(t, rotated.KeyID(), newID)
	require.Equal(t, byok.KeyID(oldKey), oldID)
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	}
	_, err := byok.FromEnv(env(nil))
	require.ErrorIs(t, err, byok.ErrNoKey)
	require.NotContains(t, byok.ErrNoKey.Error(), "\n", "a one-line error")

	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		s, err := byok.FromEnv(env(map[string]string{byok.EnvKey: " " + enc.EncodeToString(k) + "\n"}))
		require.NoError(t, err)
		require.Equal(t, byok.KeyID(k), s.KeyID())
	}

	_, err = byok.FromEnv(env(map[string]string{byok.EnvKey: base64.StdEncoding.EncodeToString(k[:16])}))
	require.ErrorContains(t, err, "16 bytes; it must be 32")
	require.ErrorContains(t, err, byok.EnvKey)
	_, err = byok.FromEnv(env(map[string]string{byok.EnvKey: "not base64 at all!!"}))
	require.ErrorContains(t, err, "not base64")
	require.NotContains(t, err.Error(), "at all")

	prev := newKey(t)
	s, err := byok.FromEnv(env(map[string]string{byok.EnvKey: base64.StdEncoding.EncodeToString(k),
		byok.EnvPreviousKeys: base64.StdEncoding.EncodeToString(prev) + ", "}))
	require.NoError(t, err)
	old, err := byok.NewSealer(prev)
	require.NoError(t, err)
	sealed, id, err := old.Seal("o", "google", []byte(apiKey))
	require.NoError(t, err)
	_, err = s.Open("o", "google", id, sealed)
	require.NoError(t, err)
	_, err = byok.FromEnv(env(map[string]string{byok.EnvKey: base64.StdEncoding.EncodeToString(k), byok.EnvPreviousKeys: "zz"}))
	require.ErrorContains(t, err, byok.EnvPreviousKeys+", key 1")
}

func TestProviderFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		family, adapter string
		scheme          core.AuthScheme
		want            string
	}{
		{"openai", "openai", core.AuthBearer, "openai"},
		{"OpenAI", "openai", core.AuthBearer, "openai"},
		{"sim-openai", "openai", core.AuthBearer, "openai"},
		{"anthropic", "anthropic", core.AuthXAPIKey, "anthropic"},
		{"google", "gemini", core.AuthGoogleAPIKey, "google"},
		{"gemini", "gemini", core.AuthGoogleAPIKey, "google"},
		{"mistral", "openai", core.AuthBearer, "mistral"},  // Mistral's OpenAI-compatible API
		{"anthropic", "bedrock", core.AuthAWSSigV4, "aws"}, // Claude on Bedrock: the AWS account pays
		{"sim-aws", "bedrock", core.AuthAWSSigV4, "aws"},
		{"meta", "openai", core.AuthBearer, ""},
		{"ollama", "ollama", core.AuthNone, ""},
		{"openai", "openai", core.AuthNone, ""},
	} {
		got, ok := byok.ProviderFor(&core.Engine{ID: "e", Family: tc.family, Adapter: tc.adapter}, tc.scheme)
		require.Equal(t, tc.want, got, "%+v", tc)
		require.Equal(t, tc.want != "", ok, "%+v", tc)
	}
	_, ok := byok.ProviderFor(nil, core.AuthBearer)
	require.False(t, ok)
}

func TestNewCredentialChecks(t *testing.T) {
	t.Parallel()
	s := newSealer(t)
	r, err := byok.NewKeyCredential(s, "org_a", "anthropic", apiKey)
	require.NoError(t, err)
	require.NoError(t, r.Validate(), "the store takes what NewKeyCredential makes")
	require.Equal(t, "WXYZ", r.Hint)
	require.Equal(t, s.KeyID(), r.KeyID)
	require.NotContains(t, fmt.Sprintf("%v %+v %#v %s", r, r, r, r), "abcdefghij")

	for _, bad := range []string{"short", "sk-with a space-0123456789", "sk-newline\n0123456789", "sk-ünïcode-0123456789", strings.Repeat("k", 1025)} {
		_, err := byok.NewKeyCredential(s, "org_a", "openai", bad)
		require.Error(t, err, "%q", bad)
		require.NotContains(t, err.Error(), bad)
	}
	_, err = byok.NewKeyCredential(s, "org_a", "aws", apiKey)
	require.ErrorContains(t, err, "not an API-key provider")
	_, err = byok.NewKeyCredential(nil, "org_a", "openai", apiKey)
	require.ErrorIs(t, err, byok.ErrNoKey)

	role, err := byok.NewRoleCredential("org_a", "arn:aws:iam::111122223333:role/conclave-bedrock", "acme-ext-7f3a")
	require.NoError(t, err)
	require.Equal(t, "7f3a", role.Hint)
	require.Nil(t, role.Sealed)
	require.NoError(t, role.Validate(), "the store takes what NewRoleCredential makes")
	_, err = byok.NewRoleCredential("org_a", "arn:aws:iam::1111:role/x", "acme-ext")
	require.ErrorContains(t, err, "not an IAM role ARN")
	_, err = byok.NewRoleCredential("org_a", "arn:aws:iam::111122223333:role/x", "")
	require.ErrorContains(t, err, "external id")
	_, err = byok.NewRoleCredential("org_a", "arn:aws:iam::111122223333:role/x", "has space")
	require.ErrorContains(t, err, "external id")
}

// memStore is a Lookup over a map that counts reads.
type memStore struct {
	mu    sync.Mutex
	recs  map[string]*core.ProviderCredential
	reads int
	err   error
}

func (m *memStore) LookupProviderCredential(_ context.Context, org, provider string) (*core.ProviderCredential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.err != nil {
		return nil, m.err
	}
	r, ok := m.recs[org+"/"+provider]
	if !ok {
		return nil, fmt.Errorf("no byok credential: %w", core.ErrNotFound)
	}
	c := *r
	return &c, nil
}

func (m *memStore) put(r *core.ProviderCredential) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[r.OrgID+"/"+r.Provider] = r
}

func (m *memStore) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

var (
	gptEngine     = &core.Engine{ID: "openai/gpt", Family: "openai", Adapter: "openai"}
	claudeEngine  = &core.Engine{ID: "anthropic/claude", Family: "anthropic", Adapter: "anthropic"}
	bedrockEngine = &core.Engine{ID: "bedrock/nova", Family: "amazon", Adapter: "bedrock", AWSRegion: "eu-west-1",
		AWSRoleARN: "arn:aws:iam::000000000000:role/conclave-service", AWSExternalID: "service-ext"}
)

func TestCredentialsServeSeatCallsOfOrganisationsWithAKey(t *testing.T) {
	t.Parallel()
	s := newSealer(t)
	st := &memStore{recs: map[string]*core.ProviderCredential{}}
	rec, err := byok.NewKeyCredential(s, "org_a", "openai", apiKey)
	require.NoError(t, err)
	st.put(rec)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	res, err := byok.NewResolver(byok.ResolverConfig{Store: st, Sealer: s, TTL: 10 * time.Second, Now: clk.Now})
	require.NoError(t, err)
	own := &byok.Credentials{Resolver: res}
	service := creds.StaticCredentials{Key: "service-key-0123456789"}
	chain := creds.Chain{own, service}
	ctx := context.Background()
	get := func(org string, e *core.Engine, scheme core.AuthScheme) (*core.Credential, error) {
		return chain.Credential(ctx, &core.CredentialRequest{Engine: e, Scheme: scheme, OrgID: org})
	}

	c, err := get("org_a", gptEngine, core.AuthBearer)
	require.NoError(t, err)
	require.Equal(t, apiKey, c.Secret)
	require.Equal(t, "byok:openai", c.Source)
	require.Equal(t, core.AuthBearer, c.Scheme)
	require.NotContains(t, fmt.Sprintf("%v %#v", c, c), apiKey)

	c, err = get("", gptEngine, core.AuthBearer)
	require.NoError(t, err)
	require.Equal(t, "service-key-0123456789", c.Secret, "a staff call (no organisation) runs on the service's key")
	require.Equal(t, core.SourceService, c.Source)

	c, err = get("org_a", claudeEngine, core.AuthXAPIKey)
	require.NoError(t, err)
	require.Equal(t, core.SourceService, c.Source, "no anthropic key: the service's")
	c, err = get("org_b", gptEngine, core.AuthBearer)
	require.NoError(t, err)
	require.Equal(t, core.SourceService, c.Source, "another organisation's key is never used")

	// The cache: one read per (organisation, provider) within the TTL,
	// absences included; a new key shows after it.
	reads := st.count()
	for range 5 {
		_, err = get("org_a", gptEngine, core.AuthBearer)
		require.NoError(t, err)
		_, err = get("org_b", gptEngine, core.AuthBearer)
		require.NoError(t, err)
	}
	require.Equal(t, reads, st.count())
	rec2, err := byok.NewKeyCredential(s, "org_b", "openai", "sk-org-b-0123456789abcdef")
	require.NoError(t, err)
	st.put(rec2)
	c, err = get("org_b", gptEngine, core.AuthBearer)
	require.NoError(t, err)
	require.Equal(t, core.SourceService, c.Source, "still cached")
	clk.Add(11 * time.Second)
	c, err = get("org_b", gptEngine, core.AuthBearer)
	require.NoError(t, err)
	require.Equal(t, "byok:openai", c.Source)
	require.Equal(t, "sk-org-b-0123456789abcdef", c.Secret)
	res.Forget("org_b")
	reads = st.count()
	_, err = get("org_b", gptEngine, core.AuthBearer)
	require.NoError(t, err)
	require.Equal(t, reads+1, st.count(), "Forget drops the organisation's entries")

	// A broken store or an unopenable key fails the call: never a silent
	// fall back to the service's key, billed at the service's rate.
	broken := &memStore{recs: map[string]*core.ProviderCredential{}, err: errors.New("connection refused")}
	bres, err := byok.NewResolver(byok.ResolverConfig{Store: broken, Sealer: s})
	require.NoError(t, err)
	_, err = creds.Chain{&byok.Credentials{Resolver: bres}, service}.Credential(ctx, &core.CredentialRequest{Engine: gptEngine, Scheme: core.AuthBearer, OrgID: "org_a"})
	require.ErrorContains(t, err, "connection refused")
	require.NotErrorIs(t, err, creds.ErrNoCredential)

	copied := *rec
	copied.OrgID = "org_c"
	st.put(&copied)
	_, err = get("org_c", gptEngine, core.AuthBearer)
	require.ErrorIs(t, err, byok.ErrOpen, "a sealed key copied to another organisation does not open")
}

func TestCredentialsAssumeTheOrganisationsRole(t *testing.T) {
	t.Parallel()
	base := aws.Credentials{AccessKeyID: "AKIABASEIDENTITY0001", SecretAccessKey: "base-secret-access-key-0123456789"}
	sts := egresstest.NewSTS(egresstest.STSConfig{Base: base})
	t.Cleanup(sts.Close)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	role, err := creds.NewAWSRoleCredentials(creds.AWSRoleConfig{
		Base: credentials.NewStaticCredentialsProvider(base.AccessKeyID, base.SecretAccessKey, ""), HTTPClient: client,
	})
	require.NoError(t, err)
	eng := *bedrockEngine
	eng.STSEndpoint = sts.URL

	st := &memStore{recs: map[string]*core.ProviderCredential{}}
	rec, err := byok.NewRoleCredential("org_a", "arn:aws:iam::111122223333:role/acme-bedrock", "acme-ext-7f3a")
	require.NoError(t, err)
	st.put(rec)
	res, err := byok.NewResolver(byok.ResolverConfig{Store: st, Sealer: newSealer(t)})
	require.NoError(t, err)
	chain := creds.Chain{&byok.Credentials{Resolver: res, AWS: role}, creds.ServiceCredentials{AWS: role}}
	ctx := context.Background()

	c, err := chain.Credential(ctx, &core.CredentialRequest{Engine: &eng, Scheme: core.AuthAWSSigV4, OrgID: "org_a"})
	require.NoError(t, err)
	require.Equal(t, "byok:aws", c.Source)
	require.NotNil(t, c.AWS)
	issued, ok := sts.Issued(c.AWS.AccessKeyID)
	require.True(t, ok, "the credential came from the STS")
	require.Equal(t, issued.SessionToken, c.AWS.SessionToken)

	svc, err := chain.Credential(ctx, &core.CredentialRequest{Engine: &eng, Scheme: core.AuthAWSSigV4})
	require.NoError(t, err)
	require.Equal(t, core.SourceService, svc.Source)
	require.NotEqual(t, c.AWS.AccessKeyID, svc.AWS.AccessKeyID)

	calls := sts.Calls()
	require.Len(t, calls, 2)
	require.Equal(t, "arn:aws:iam::111122223333:role/acme-bedrock", calls[0].RoleARN, "the organisation's role")
	require.Equal(t, "acme-ext-7f3a", calls[0].ExternalID)
	require.Equal(t, "arn:aws:iam::000000000000:role/conclave-service", calls[1].RoleARN, "the service's own role")
	require.Equal(t, "service-ext", calls[1].ExternalID)
	require.Equal(t, "arn:aws:iam::000000000000:role/conclave-service", eng.AWSRoleARN, "the engine is not changed")

	// Without an AWS identity to assume it with, the organisation's role
	// fails the call rather than falling back to the service's.
	_, err = creds.Chain{&byok.Credentials{Resolver: res}, creds.ServiceCredentials{AWS: role}}.Credential(ctx,
		&core.CredentialRequest{Engine: &eng, Scheme: core.AuthAWSSigV4, OrgID: "org_a"})
	require.ErrorContains(t, err, "no AWS identity")
	require.NotErrorIs(t, err, creds.ErrNoCredential)
}
