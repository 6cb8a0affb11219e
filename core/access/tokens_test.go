package access

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/oauth"
)

// countingVerifier answers a fixed token for "good…" secrets and counts
// its verifications.
type countingVerifier struct {
	n       int
	expires time.Time
}

func (v *countingVerifier) VerifyToken(_ context.Context, token string) (*oauth.Token, error) {
	v.n++
	if token[:4] != "good" {
		return nil, core.Errorf(core.CodeInvalidOAuthToken, "bad")
	}
	return &oauth.Token{PersonID: "person_1", Expires: v.expires}, nil
}

// A token that verified is verified again only once it has expired; one
// that failed is asked about every time.
func TestVerifiedTokensAreRememberedUntilTheyExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTokenCache()
	v := &countingVerifier{expires: time.Now().Add(time.Minute)}
	for range 3 {
		tok, err := c.verify(ctx, v, "good-1")
		if err != nil || tok.PersonID != "person_1" {
			t.Fatalf("verify: %v %v", tok, err)
		}
	}
	if v.n != 1 {
		t.Fatalf("verified %d times, want once", v.n)
	}
	for range 2 {
		if _, err := c.verify(ctx, v, "bad-1"); err == nil {
			t.Fatal("a bad token verified")
		}
	}
	if v.n != 3 {
		t.Fatalf("verified %d times, want 3: a refusal is not remembered", v.n)
	}
	v.expires = time.Now().Add(-time.Second)
	if _, err := c.verify(ctx, v, "good-expired"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.verify(ctx, v, "good-expired"); err != nil {
		t.Fatal(err)
	}
	if v.n != 5 {
		t.Fatalf("verified %d times, want 5: an expired entry is verified again", v.n)
	}
}

// failingGrants is a grant store that cannot be read.
type failingGrants struct{ GrantLookup }

func (failingGrants) Grant(context.Context, string) (*oauth.Grant, error) {
	return nil, errors.New("connection refused")
}

type noKeys struct{}

func (noKeys) KeyByHash(context.Context, []byte) (*core.Key, *core.Org, error) {
	return nil, nil, core.ErrNotFound
}

type noAuthz struct{}

func (noAuthz) Decide(context.Context, *core.AuthzInput) (*core.Decision, error) {
	return &core.Decision{}, nil
}

type noMeter struct{}

func (noMeter) Admit(context.Context, *core.AdmitParams) (*core.AdmitResult, error) {
	return &core.AdmitResult{}, nil
}

// A token that verifies but whose grant cannot be read is refused with
// oauth_unavailable, never let through; a verifier that fails for another
// reason than the token is oauth_unavailable too.
func TestUnreadableGrantIsOAuthUnavailable(t *testing.T) {
	t.Parallel()
	s, err := New(Config{}, noKeys{}, noAuthz{}, noMeter{})
	if err != nil {
		t.Fatal(err)
	}
	v := &countingVerifier{expires: time.Now().Add(time.Minute)}
	if err := s.UseTokens(v, failingGrants{}, 0); err != nil {
		t.Fatal(err)
	}
	p, err := s.AuthenticateBearer(context.Background(), "good-token")
	if p != nil || core.AsError(err).Code != core.CodeOAuthUnavailable {
		t.Fatalf("got %v, %v; want oauth_unavailable", p, err)
	}
	if _, err := s.AuthenticateBearer(context.Background(), "bad-token"); core.AsError(err).Code != core.CodeInvalidOAuthToken {
		t.Fatalf("a bad token: %v; want invalid_oauth_token", err)
	}
	if _, err := s.Authenticate(context.Background(), "good-token"); core.AsError(err).Code != core.CodeInvalidAPIKey {
		t.Fatalf("Authenticate (the REST path) took a token: %v", err)
	}
}
