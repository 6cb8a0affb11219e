package creds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/conclavehq/conclave/core"
)

// AWSRoleConfig configures AWSRoleCredentials.
type AWSRoleConfig struct {
	// Base is the service's own AWS identity. It signs nothing but the STS
	// AssumeRole calls. Required.
	Base aws.CredentialsProvider
	// Region is the STS region, and the region of the credentials handed
	// out, for engines that name no AWSRegion. Defaults to "us-east-1".
	Region string
	// Duration is how long an assumed credential lives (AssumeRole
	// DurationSeconds), from 15 minutes to 1 hour. Defaults to 15 minutes.
	Duration time.Duration
	// RefreshBefore is how long before its expiry a cached credential is
	// replaced; less than Duration. Defaults to 5 minutes.
	RefreshBefore time.Duration
	// Timeout bounds one AssumeRole, the SDK's own retries included.
	// Defaults to 30s.
	Timeout time.Duration
	// HTTPClient sends the STS requests. Defaults to a client of its own
	// with transport timeouts; CloseIdleConnections closes its connections.
	HTTPClient *http.Client
	// Now is the clock that decides when a cached credential is stale.
	// Defaults to time.Now.
	Now func() time.Time
	// Logger gets a debug line per AssumeRole (role ARN, organisation,
	// expiry; never a secret or an external id). Defaults to a logger that
	// discards.
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c AWSRoleConfig) WithDefaults() AWSRoleConfig {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Duration == 0 {
		c.Duration = 15 * time.Minute
	}
	if c.RefreshBefore == 0 {
		c.RefreshBefore = 5 * time.Minute
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = newSTSClient()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c AWSRoleConfig) validate() error {
	switch {
	case c.Base == nil:
		return errors.New("creds: AWSRoleConfig.Base is required")
	case c.Duration < 15*time.Minute || c.Duration > time.Hour:
		return errors.New("creds: AWSRoleConfig.Duration must be between 15m and 1h")
	case c.RefreshBefore < 0 || c.RefreshBefore >= c.Duration:
		return errors.New("creds: AWSRoleConfig.RefreshBefore must be at least 0 and less than Duration")
	case c.Timeout < 0:
		return errors.New("creds: AWSRoleConfig.Timeout cannot be negative")
	}
	return nil
}

func newSTSClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}}
}

// AWSRoleCredentials hands out short-lived AWS credentials for aws-sigv4
// engines: an STS AssumeRole of Engine.AWSRoleARN (with Engine.AWSExternalID
// when set), signed by the service's base identity, sent to
// Engine.STSEndpoint when set. Credentials are cached per role, external id
// and organisation until RefreshBefore their expiry; concurrent callers for
// the same key share one AssumeRole. It keeps no long-lived secret of its
// own. It is safe for concurrent use.
type AWSRoleCredentials struct {
	cfg AWSRoleConfig

	mu      sync.Mutex
	cache   map[roleKey]core.AWSCredential
	flights map[roleKey]*flight
	clients map[clientKey]*sts.Client
}

// roleKey is what a cached credential is valid for. The STS endpoint and
// region are part of it so that two deployments of one role (a test double
// and the real STS, say) never share a credential.
type roleKey struct {
	roleARN, externalID, org string
	region, endpoint         string
}

type clientKey struct{ region, endpoint string }

// flight is one AssumeRole in progress; done closes when cred or err is set.
type flight struct {
	done chan struct{}
	cred core.AWSCredential
	err  error
}

// NewAWSRoleCredentials checks cfg and returns the provider.
func NewAWSRoleCredentials(cfg AWSRoleConfig) (*AWSRoleCredentials, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &AWSRoleCredentials{
		cfg:     cfg,
		cache:   map[roleKey]core.AWSCredential{},
		flights: map[roleKey]*flight{},
		clients: map[clientKey]*sts.Client{},
	}, nil
}

// EnvBaseCredentials is the service's base AWS identity read once from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, when set, AWS_SESSION_TOKEN.
// lookup defaults to os.LookupEnv. The error names missing variables only.
func EnvBaseCredentials(lookup func(string) (string, bool)) (aws.CredentialsProvider, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	id, _ := lookup("AWS_ACCESS_KEY_ID")
	secret, _ := lookup("AWS_SECRET_ACCESS_KEY")
	token, _ := lookup("AWS_SESSION_TOKEN")
	if id == "" || secret == "" {
		return nil, fmt.Errorf("creds: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set: %w", ErrUnset)
	}
	return credentials.NewStaticCredentialsProvider(id, secret, token), nil
}

// Credential implements core.Credentials for the aws-sigv4 scheme; other
// schemes, and engines that name no role, get ErrNoCredential.
func (a *AWSRoleCredentials) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	if req == nil || req.Engine == nil {
		return nil, errors.New("creds: credential request names no engine")
	}
	if req.Scheme != core.AuthAWSSigV4 {
		return nil, noCredential(req, "not the aws-sigv4 scheme")
	}
	if req.Engine.AWSRoleARN == "" {
		return nil, noCredential(req, "engine names no aws_role_arn")
	}
	k := roleKey{
		roleARN: req.Engine.AWSRoleARN, externalID: req.Engine.AWSExternalID, org: req.OrgID,
		region: req.Engine.AWSRegion, endpoint: req.Engine.STSEndpoint,
	}
	if k.region == "" {
		k.region = a.cfg.Region
	}

	a.mu.Lock()
	if c, ok := a.cache[k]; ok && a.fresh(c) {
		a.mu.Unlock()
		return sigv4Credential(c), nil
	}
	f, ok := a.flights[k]
	if !ok {
		f = &flight{done: make(chan struct{})}
		a.flights[k] = f
		// The AssumeRole runs on its own so that every waiter, the first
		// included, can give up when its own ctx ends while the others still
		// get the result. WithoutCancel keeps ctx's values (trace ids).
		go a.assume(context.WithoutCancel(ctx), k, f)
	}
	a.mu.Unlock()

	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return sigv4Credential(f.cred), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *AWSRoleCredentials) fresh(c core.AWSCredential) bool {
	return a.cfg.Now().Before(c.Expires.Add(-a.cfg.RefreshBefore))
}

func sigv4Credential(c core.AWSCredential) *core.Credential {
	return &core.Credential{Scheme: core.AuthAWSSigV4, AWS: &c, Source: SourceService}
}

// staleGrace is how long a credential that failed to refresh must still be
// valid for to be handed out in the meantime.
const staleGrace = time.Minute

func (a *AWSRoleCredentials) assume(ctx context.Context, k roleKey, f *flight) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	cred, err := a.assumeRole(ctx, k)

	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.flights, k)
	now := a.cfg.Now()
	if err != nil {
		if old, ok := a.cache[k]; ok && now.Add(staleGrace).Before(old.Expires) {
			// STS is unreachable but the credential we hold still works:
			// keep serving it rather than fail calls that would succeed.
			a.cfg.Logger.Debug("creds: AssumeRole refresh failed; using the cached credential", "role_arn", k.roleARN, "org", k.org, "expires", old.Expires, "error", err)
			f.cred = old
		} else {
			f.err = err
		}
		close(f.done)
		return
	}
	for key, c := range a.cache { // drop what can no longer be used
		if !now.Before(c.Expires) {
			delete(a.cache, key)
		}
	}
	a.cache[k] = cred
	f.cred = cred
	close(f.done)
	a.cfg.Logger.Debug("creds: assumed role", "role_arn", k.roleARN, "org", k.org, "expires", cred.Expires)
}

func (a *AWSRoleCredentials) assumeRole(ctx context.Context, k roleKey) (core.AWSCredential, error) {
	client, err := a.client(k.region, k.endpoint)
	if err != nil {
		return core.AWSCredential{}, err
	}
	in := &sts.AssumeRoleInput{
		RoleArn:         aws.String(k.roleARN),
		RoleSessionName: aws.String(sessionName()),
		DurationSeconds: aws.Int32(int32(a.cfg.Duration / time.Second)),
	}
	if k.externalID != "" {
		in.ExternalId = aws.String(k.externalID)
	}
	out, err := client.AssumeRole(ctx, in)
	if err != nil {
		return core.AWSCredential{}, fmt.Errorf("creds: assuming role %s: %w", k.roleARN, err)
	}
	c := out.Credentials
	if c == nil || c.AccessKeyId == nil || c.SecretAccessKey == nil || c.SessionToken == nil {
		return core.AWSCredential{}, fmt.Errorf("creds: assuming role %s: STS returned no credentials", k.roleARN)
	}
	expires := a.cfg.Now().Add(a.cfg.Duration)
	if c.Expiration != nil {
		expires = *c.Expiration
	}
	return core.AWSCredential{
		AccessKeyID:     *c.AccessKeyId,
		SecretAccessKey: *c.SecretAccessKey,
		SessionToken:    *c.SessionToken,
		Region:          k.region,
		Expires:         expires,
	}, nil
}

func (a *AWSRoleCredentials) client(region, endpoint string) (*sts.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ck := clientKey{region, endpoint}
	if c, ok := a.clients[ck]; ok {
		return c, nil
	}
	opts := sts.Options{Region: region, Credentials: a.cfg.Base, HTTPClient: a.cfg.HTTPClient}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return nil, errors.New("creds: the STS endpoint is not an http(s) URL without user information")
		}
		// A signed AssumeRole could be replayed against the real STS for a
		// few minutes by whoever reads it: plain http only on this machine.
		if u.Scheme == "http" && !loopback(u.Hostname()) {
			return nil, fmt.Errorf("creds: the STS endpoint on %s must use https: plain http is for loopback only", u.Hostname())
		}
		opts.BaseEndpoint = aws.String(endpoint)
	}
	c := sts.New(opts)
	a.clients[ck] = c
	return c, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// CloseIdleConnections closes the idle connections of the STS HTTP client.
func (a *AWSRoleCredentials) CloseIdleConnections() { a.cfg.HTTPClient.CloseIdleConnections() }

// sessionName is a RoleSessionName: "conclave-" and 12 random hex digits,
// so that CloudTrail tells sessions apart.
func sessionName() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "conclave-" + hex.EncodeToString(b[:])
}

var _ core.Credentials = (*AWSRoleCredentials)(nil)
