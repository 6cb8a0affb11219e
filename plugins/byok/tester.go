package byok

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Caller makes one engine call for an organisation (the egress layer's
// providers.Providers satisfies it).
type Caller interface {
	Call(ctx context.Context, engineID, orgID string, req *core.SeatRequest) (*core.SeatAnswer, error)
}

// Tester tests an organisation's own provider credential from the
// dashboard: one short call, through the egress layer as a seat's call
// goes, to the cheapest configured engine of the provider.
type Tester struct {
	Catalog *core.Catalog
	Caller  Caller
	// Forget drops the credential cache of an organisation (the
	// Resolver's), so that a key just set or replaced is the one tested.
	// Optional.
	Forget func(orgID string)
}

// testTimeout bounds one provider test.
const testTimeout = 20 * time.Second

// engineFor is the cheapest engine whose calls provider's credential
// serves, by id among equals; nil when none is configured.
func (t *Tester) engineFor(provider string) *core.Engine {
	var found []*core.Engine
	for _, e := range t.Catalog.Engines() {
		scheme := core.AuthBearer
		if e.Adapter == "bedrock" {
			scheme = core.AuthAWSSigV4
		}
		if p, ok := ProviderFor(e, scheme); ok && p == provider {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool {
		ci, cj := found[i].InputPerMTok+found[i].OutputPerMTok, found[j].InputPerMTok+found[j].OutputPerMTok
		if ci != cj {
			return ci < cj
		}
		return found[i].ID < found[j].ID
	})
	return found[0]
}

// TestProvider implements the dashboard's Tester.
func (t *Tester) TestProvider(ctx context.Context, orgID, provider string) (*core.ProviderTest, error) {
	e := t.engineFor(provider)
	if e == nil {
		return &core.ProviderTest{Problem: "No engine of this provider is configured on this service, so there is nothing to test the key with."}, nil
	}
	if t.Forget != nil {
		t.Forget(orgID)
	}
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	start := time.Now()
	ans, err := t.Caller.Call(ctx, e.ID, orgID, &core.SeatRequest{
		Messages: []core.Message{{Role: core.RoleUser, Content: "Reply with the word OK."}}, MaxTokens: 16,
	})
	res := &core.ProviderTest{Engine: e.ID, Latency: time.Since(start)}
	var pe *core.ProviderError
	switch {
	case errors.As(err, &pe):
		res.Problem = "The provider refused the call (" + string(pe.Class) + "). Check the key, and that it may use " + e.Model + "."
	case err != nil:
		res.Problem = "The call could not be made: " + err.Error()
	case ans == nil || ans.Error != nil:
		res.Problem = "The provider answered with an error. Check the key, and that it may use " + e.Model + "."
	case ans.Source != core.SourceBYOK(provider):
		res.Problem = "The call ran on the service's own key, not yours: your key could not be used (is it set, and is bring-your-own-key on?)."
	default:
		res.OK = true
	}
	return res, nil
}
