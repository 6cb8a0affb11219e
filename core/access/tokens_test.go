package access

import (
	"context"
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
