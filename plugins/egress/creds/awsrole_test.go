package creds_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress/creds"
	"github.com/conclavehq/conclave/plugins/egress/egresstest"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

var base = aws.Credentials{AccessKeyID: "AKIABASEIDENTITY0001", SecretAccessKey: "base-secret-access-key-0123456789"}

type roleBundle struct {
	role  *creds.AWSRoleCredentials
	sts   *egresstest.STS
	clock *clock
	eng   *core.Engine
}

func setupRole(t *testing.T, cfg creds.AWSRoleConfig, hold <-chan struct{}) *roleBundle {
	t.Helper()
	clk := newClock()
	sts := egresstest.NewSTS(egresstest.STSConfig{Base: base, Now: clk.Now, Hold: hold})
	t.Cleanup(sts.Close)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	if cfg.Base == nil {
		cfg.Base = credentials.NewStaticCredentialsProvider(base.AccessKeyID, base.SecretAccessKey, "")
	}
	cfg.HTTPClient, cfg.Now = client, clk.Now
	role, err := creds.NewAWSRoleCredentials(cfg)
	require.NoError(t, err)
	return &roleBundle{role: role, sts: sts, clock: clk, eng: &core.Engine{
		ID: "bedrock/claude", AWSRegion: "eu-west-1", STSEndpoint: sts.URL,
		AWSRoleARN: "arn:aws:iam::123456789012:role/conclave-bedrock", AWSExternalID: "ext-7f3a",
	}}
}

func (b *roleBundle) get(t *testing.T, org string) *core.AWSCredential {
	t.Helper()
	c, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4, OrgID: org})
	require.NoError(t, err)
	require.Equal(t, core.AuthAWSSigV4, c.Scheme)
	require.Equal(t, "service", c.Source)
	return c.AWS
}

func TestAWSRoleAssumeRole(t *testing.T) {
	t.Parallel()
	b := setupRole(t, creds.AWSRoleConfig{}, nil)
	got := b.get(t, "")

	calls := b.sts.Calls()
	require.Len(t, calls, 1)
	call := calls[0]
	require.Equal(t, b.eng.AWSRoleARN, call.RoleARN)
	require.Equal(t, "ext-7f3a", call.ExternalID)
	require.Equal(t, 900, call.DurationSeconds)
	require.True(t, strings.HasPrefix(call.RoleSessionName, "conclave-"), call.RoleSessionName)
	require.LessOrEqual(t, len(call.RoleSessionName), 64)

	require.Equal(t, call.Issued.AccessKeyID, got.AccessKeyID)
	require.Equal(t, call.Issued.SecretAccessKey, got.SecretAccessKey)
	require.Equal(t, call.Issued.SessionToken, got.SessionToken)
	require.Equal(t, "eu-west-1", got.Region)
	require.True(t, got.Expires.Equal(b.clock.Now().Add(15*time.Minute)), got.Expires)

	t.Run("no external id when the engine names none", func(t *testing.T) {
		t.Parallel()
		b := setupRole(t, creds.AWSRoleConfig{Duration: time.Hour}, nil)
		b.eng.AWSExternalID, b.eng.AWSRegion = "", ""
		got := b.get(t, "")
		calls := b.sts.Calls()
		require.Len(t, calls, 1)
		require.Empty(t, calls[0].ExternalID)
		require.Equal(t, 3600, calls[0].DurationSeconds)
		require.Equal(t, "us-east-1", got.Region, "the configured default region")
	})
}

func TestAWSRoleCacheAndRefresh(t *testing.T) {
	t.Parallel()
	b := setupRole(t, creds.AWSRoleConfig{RefreshBefore: 5 * time.Minute}, nil)
	first := b.get(t, "")
	start := b.clock.Now()

	b.clock.Set(start.Add(9 * time.Minute))
	require.Equal(t, first.AccessKeyID, b.get(t, "").AccessKeyID, "cached until 5 minutes before expiry")
	require.Len(t, b.sts.Calls(), 1)

	b.clock.Set(start.Add(10*time.Minute + time.Second))
	second := b.get(t, "")
	require.NotEqual(t, first.AccessKeyID, second.AccessKeyID, "refreshed near expiry")
	require.Len(t, b.sts.Calls(), 2)
	require.Equal(t, second.AccessKeyID, b.get(t, "").AccessKeyID)
	require.Len(t, b.sts.Calls(), 2)

	// Each organisation, external id and role has its own credential.
	b.get(t, "org_a")
	b.get(t, "org_a")
	b.get(t, "org_b")
	require.Len(t, b.sts.Calls(), 4)

	// A handed-out credential is a copy: changing it leaves the cache alone.
	c := b.get(t, "org_b")
	c.SecretAccessKey = "tampered"
	require.NotEqual(t, "tampered", b.get(t, "org_b").SecretAccessKey)
}

func TestAWSRoleConcurrentCallersShareOneAssumeRole(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	b := setupRole(t, creds.AWSRoleConfig{}, hold)

	const n = 16
	type result struct {
		c   *core.Credential
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4, OrgID: "org_1"})
			results <- result{c, err}
		})
	}
	require.Eventually(t, func() bool { return b.sts.Waiting() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // let the other callers reach the in-flight call
	close(hold)
	wg.Wait()
	close(results)

	require.Len(t, b.sts.Calls(), 1)
	want := b.sts.Calls()[0].Issued.AccessKeyID
	for r := range results {
		require.NoError(t, r.err)
		require.Equal(t, want, r.c.AWS.AccessKeyID)
	}
}

func TestAWSRoleWaiterGivesUpAlone(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	b := setupRole(t, creds.AWSRoleConfig{}, hold)
	req := &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4}

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.role.Credential(ctx, req)
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return b.sts.Waiting() == 1 }, 5*time.Second, time.Millisecond)
	other := make(chan *core.Credential, 1)
	otherErr := make(chan error, 1)
	go func() {
		c, err := b.role.Credential(context.Background(), req)
		other <- c
		otherErr <- err
	}()
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	close(hold)
	c := <-other
	require.NoError(t, <-otherErr)
	require.Equal(t, b.sts.Calls()[0].Issued.AccessKeyID, c.AWS.AccessKeyID, "the first caller's cancellation did not cancel the AssumeRole")
}

func TestAWSRoleFailures(t *testing.T) {
	t.Parallel()

	t.Run("STS refuses", func(t *testing.T) {
		t.Parallel()
		b := setupRole(t, creds.AWSRoleConfig{}, nil)
		b.sts.SetFailing(true)
		_, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4})
		require.Error(t, err)
		require.Contains(t, err.Error(), b.eng.AWSRoleARN)
		require.Contains(t, err.Error(), "AccessDenied")
		require.NotContains(t, err.Error(), base.SecretAccessKey)
		require.NotContains(t, err.Error(), "ext-7f3a")
		b.sts.SetFailing(false)
		b.get(t, "") // failures are not cached
	})

	t.Run("wrong base identity", func(t *testing.T) {
		t.Parallel()
		b := setupRole(t, creds.AWSRoleConfig{Base: credentials.NewStaticCredentialsProvider(base.AccessKeyID, "not-the-secret-0000000000", "")}, nil)
		_, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4})
		require.ErrorContains(t, err, "SignatureDoesNotMatch")
		require.Empty(t, b.sts.Calls())
	})

	t.Run("a still-valid credential outlives a failed refresh", func(t *testing.T) {
		t.Parallel()
		b := setupRole(t, creds.AWSRoleConfig{}, nil)
		first := b.get(t, "")
		b.sts.SetFailing(true)
		b.clock.Set(first.Expires.Add(-2 * time.Minute))
		require.Equal(t, first.AccessKeyID, b.get(t, "").AccessKeyID)
		b.clock.Set(first.Expires.Add(-30 * time.Second))
		_, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4})
		require.Error(t, err)
	})

	t.Run("not for this provider", func(t *testing.T) {
		t.Parallel()
		b := setupRole(t, creds.AWSRoleConfig{}, nil)
		_, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthBearer})
		require.ErrorIs(t, err, creds.ErrNoCredential)
		_, err = b.role.Credential(context.Background(), &core.CredentialRequest{Engine: &core.Engine{ID: "x"}, Scheme: core.AuthAWSSigV4})
		require.ErrorIs(t, err, creds.ErrNoCredential)
		require.Empty(t, b.sts.Calls())
	})

	t.Run("bad STS endpoint", func(t *testing.T) {
		t.Parallel()
		b := setupRole(t, creds.AWSRoleConfig{}, nil)
		for _, ep := range []string{"ftp://sts.example", "http://sts.example.com", "https://user:pw@sts.example.com"} {
			b.eng.STSEndpoint = ep
			_, err := b.role.Credential(context.Background(), &core.CredentialRequest{Engine: b.eng, Scheme: core.AuthAWSSigV4})
			require.ErrorContains(t, err, "STS endpoint", ep)
			require.NotContains(t, err.Error(), "pw")
		}
		require.Empty(t, b.sts.Calls())
	})
}

func TestAWSRoleConfigValidation(t *testing.T) {
	t.Parallel()
	p := credentials.NewStaticCredentialsProvider("a", "b", "")
	for name, cfg := range map[string]creds.AWSRoleConfig{
		"no base":         {},
		"short duration":  {Base: p, Duration: 10 * time.Minute},
		"long duration":   {Base: p, Duration: 2 * time.Hour},
		"refresh too big": {Base: p, RefreshBefore: 15 * time.Minute},
		"negative":        {Base: p, Timeout: -1},
	} {
		_, err := creds.NewAWSRoleCredentials(cfg)
		require.Error(t, err, name)
	}
}
