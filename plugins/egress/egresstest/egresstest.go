// Package egresstest has stand-ins for the authentication side of model
// providers, for tests of the egress layer and of anything built on it
// (the simulated provider, say): an STS server that answers AssumeRole with
// real STS XML and checks the caller's SigV4 signature, and VerifySigV4,
// which checks a request's signature by signing it again. Nothing here is
// meant for production. STS is safe for concurrent use.
package egresstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// VerifySigV4 checks that r, whose body was body, carries a valid AWS
// Signature V4 made with cred for service and region: it signs a copy of
// the request with the same time and signed headers and compares the
// Authorization headers. The error never contains a secret.
func VerifySigV4(r *http.Request, body []byte, cred aws.Credentials, service, region string) error {
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return errors.New("no AWS4-HMAC-SHA256 Authorization header")
	}
	signed := authField(auth, "SignedHeaders=")
	if signed == "" {
		return errors.New("no signed headers in the Authorization header")
	}
	if got, want := authField(auth, "Credential="), cred.AccessKeyID+"/"; !strings.HasPrefix(got, want) {
		return errors.New("signed with another access key")
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("no valid X-Amz-Date header")
	}
	if cred.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != cred.SessionToken {
		return errors.New("the X-Amz-Security-Token header is not the session token")
	}
	u := "http://" + r.Host + r.URL.RequestURI()
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	re, err := http.NewRequest(r.Method, u, rd)
	if err != nil {
		return fmt.Errorf("rebuilding the request: %w", err)
	}
	for _, h := range strings.Split(signed, ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		vs := r.Header.Values(h)
		if len(vs) == 0 {
			return fmt.Errorf("signed header %q is missing", h)
		}
		re.Header[http.CanonicalHeaderKey(h)] = vs
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), cred, re, hex.EncodeToString(sum[:]), service, region, when); err != nil {
		return fmt.Errorf("re-signing: %w", err)
	}
	if re.Header.Get("Authorization") != auth {
		return errors.New("signature does not match")
	}
	return nil
}

// authField reads one comma-separated field of an Authorization header.
func authField(auth, name string) string {
	i := strings.Index(auth, name)
	if i < 0 {
		return ""
	}
	v := auth[i+len(name):]
	if j := strings.IndexByte(v, ','); j >= 0 {
		v = v[:j]
	}
	return strings.TrimSpace(v)
}

// STSConfig configures an STS stand-in.
type STSConfig struct {
	// Base is the identity every AssumeRole must be signed with. Required.
	Base aws.Credentials
	// Now stamps the expiry of issued credentials. Defaults to time.Now.
	Now func() time.Time
	// Hold, when set, makes every AssumeRole wait until it is closed (or the
	// request is abandoned). Defaults to nil: answer at once.
	Hold <-chan struct{}
}

// AssumeRoleCall is one AssumeRole the stand-in answered.
type AssumeRoleCall struct {
	RoleARN, ExternalID, RoleSessionName string
	DurationSeconds                      int
	// Issued is what the call returned.
	Issued aws.Credentials
}

// STS is an httptest server that answers AssumeRole like AWS STS.
type STS struct {
	// URL is the server's base URL, for Engine.STSEndpoint.
	URL string

	cfg     STSConfig
	srv     *httptest.Server
	failing atomic.Bool
	waiting atomic.Int64

	mu     sync.Mutex
	calls  []AssumeRoleCall
	issued map[string]aws.Credentials // by access key id
}

// NewSTS starts an STS stand-in; Close stops it.
func NewSTS(cfg STSConfig) *STS {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &STS{cfg: cfg, issued: map[string]aws.Credentials{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *STS) Close() { s.srv.Close() }

// SetFailing makes AssumeRole answer 403 AccessDenied, as when a role's
// trust policy refuses the caller (true), or work again (false).
func (s *STS) SetFailing(fail bool) { s.failing.Store(fail) }

// Waiting is how many AssumeRole requests are waiting on Hold.
func (s *STS) Waiting() int { return int(s.waiting.Load()) }

// Calls lists the AssumeRole calls answered so far.
func (s *STS) Calls() []AssumeRoleCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AssumeRoleCall(nil), s.calls...)
}

// Issued finds the credential issued with an access key id.
func (s *STS) Issued(accessKeyID string) (aws.Credentials, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.issued[accessKeyID]
	return c, ok
}

func (s *STS) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		stsError(w, http.StatusBadRequest, "InvalidRequest", "unreadable body")
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || r.Method != http.MethodPost || form.Get("Action") != "AssumeRole" {
		stsError(w, http.StatusBadRequest, "InvalidAction", "only POST AssumeRole is served")
		return
	}
	region := strings.Split(authField(r.Header.Get("Authorization"), "Credential="), "/")
	if len(region) < 3 {
		stsError(w, http.StatusForbidden, "IncompleteSignature", "no credential scope")
		return
	}
	if err := VerifySigV4(r, body, s.cfg.Base, "sts", region[2]); err != nil {
		stsError(w, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
		return
	}
	if s.cfg.Hold != nil {
		s.waiting.Add(1)
		defer s.waiting.Add(-1)
		select {
		case <-s.cfg.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if s.failing.Load() {
		stsError(w, http.StatusForbidden, "AccessDenied", "not authorized to perform sts:AssumeRole (failing on purpose)")
		return
	}
	dur, _ := strconv.Atoi(form.Get("DurationSeconds"))
	if dur == 0 {
		dur = 3600
	}
	if dur < 900 || dur > 43200 {
		stsError(w, http.StatusBadRequest, "ValidationError", "DurationSeconds out of range")
		return
	}
	expires := s.cfg.Now().Add(time.Duration(dur) * time.Second).UTC().Truncate(time.Second)
	cred := aws.Credentials{
		AccessKeyID: "ASIA" + strings.ToUpper(randHex(8)), SecretAccessKey: randHex(20), SessionToken: "FQoG" + randHex(64),
		CanExpire: true, Expires: expires,
	}
	call := AssumeRoleCall{
		RoleARN: form.Get("RoleArn"), ExternalID: form.Get("ExternalId"), RoleSessionName: form.Get("RoleSessionName"),
		DurationSeconds: dur, Issued: cred,
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.issued[cred.AccessKeyID] = cred
	s.mu.Unlock()

	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>%s</AccessKeyId>
      <SecretAccessKey>%s</SecretAccessKey>
      <SessionToken>%s</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:%s</AssumedRoleId>
      <Arn>%s/%s</Arn>
    </AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>
</AssumeRoleResponse>`, cred.AccessKeyID, cred.SecretAccessKey, cred.SessionToken, expires.Format(time.RFC3339),
		call.RoleSessionName, strings.Replace(call.RoleARN, ":role/", ":assumed-role/", 1), call.RoleSessionName, randHex(16))
}

func stsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
		code, html.EscapeString(msg), randHex(16))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
