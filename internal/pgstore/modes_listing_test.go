package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// countingPool is a pool of one connection on a fresh database that counts
// every byte it reads from PostgreSQL: what a query fetched, whatever the
// code does with it afterwards.
func countingPool(tb testing.TB) (*pgxpool.Pool, *atomic.Int64) {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(tb))
	require.NoError(tb, err)
	cfg.MaxConns = 1
	read := new(atomic.Int64)
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, read: read}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	return pool, read
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// listingFixture is a database holding published modes of other
// organisations and released modes of the organisation that lists, each
// draft (and so each released spec) padded to a size, and the mode source
// that lists them.
type listingFixture struct {
	src    *core.AuthoredModeSource
	viewer *core.Org
	read   *atomic.Int64
	// want is how many modes the viewer is listed: the configured ones,
	// then the authored ones.
	want int
}

// newListingFixture publishes published modes (ten to an organisation)
// and releases own modes of the viewer, each with a draft padded with pad
// bytes of incompressible text.
func newListingFixture(tb testing.TB, published, own, pad int) *listingFixture {
	tb.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(tb, err)
	cat, err := cfg.Catalog()
	require.NoError(tb, err)
	pool, read := countingPool(tb)
	s := pgstore.New(pool)
	src := core.NewAuthoredModeSource(cat, s)
	padding := make([]byte, pad*3/4)
	_, _ = rand.Read(padding)
	notes := base64.StdEncoding.EncodeToString(padding)

	release := func(org *core.Org, ticker string) *core.AuthoredMode {
		spec := panelSpec(ticker, 2)
		sp, err := modes.Decode(spec)
		require.NoError(tb, err)
		// The store keeps a draft as saved, whatever it holds: the padding
		// stands for a large draft, and is copied into the released spec.
		var draft map[string]any
		require.NoError(tb, json.Unmarshal(spec, &draft))
		draft["notes"] = notes
		padded, err := json.Marshal(draft)
		require.NoError(tb, err)
		m, err := s.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, Name: sp.Name, Ticker: sp.Ticker, Spec: padded, Validated: true})
		require.NoError(tb, err)
		mode, err := modes.ToMode(sp, modes.Author{OrgID: org.ID, OrgTicker: org.Ticker}, cat.Engines(), nil)
		require.NoError(tb, err)
		_, err = s.ReleaseMode(ctx, &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision,
			Mode: mode, ConfigHash: src.ModeConfigHash(mode)})
		require.NoError(tb, err)
		return m
	}
	letters := func(i int) string { return string(rune('A'+i/26%26)) + string(rune('A'+i%26)) }

	var org *core.Org
	for i := range published {
		if i%10 == 0 {
			org, _, err = s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Publisher " + letters(i/10), Ticker: "PB" + letters(i/10)})
			require.NoError(tb, err)
		}
		m := release(org, "PN"+letters(i))
		m, err = s.ChangeListing(ctx, org.ID, m.ID, core.ModeAction{Kind: core.ActionRequestListing, ListingRevision: m.ListingRevision})
		require.NoError(tb, err)
		_, err = s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, ListingRevision: m.ListingRevision, Version: 1})
		require.NoError(tb, err)
	}
	viewer, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Viewer", Ticker: "VIEW"})
	require.NoError(tb, err)
	for i := range own {
		release(viewer, "OW"+letters(i))
	}
	return &listingFixture{src: src, viewer: viewer, read: read, want: len(cat.Modes()) + published + own}
}

// list lists the viewer's modes as GET /v1/models and list_modes do, and
// returns them with the bytes the listing read from PostgreSQL.
func (f *listingFixture) list(ctx context.Context) ([]*core.Mode, int64, error) {
	before := f.read.Load()
	ms, err := f.src.ListModes(ctx, f.viewer.ID)
	return ms, f.read.Load() - before, err
}

// Listing modes (GET /v1/models, list_modes) reads what the listing shows
// of each mode, not its draft nor its released spec: with two authored
// modes whose drafts hold 48 KiB each, the listing reads less from the
// database than one of those drafts.
func TestListingModesReadsNoDraftOrSpec(t *testing.T) {
	t.Parallel()
	const pad = 48 << 10
	f := newListingFixture(t, 1, 1, pad)
	ms, read, err := f.list(context.Background())
	require.NoError(t, err)
	require.Len(t, ms, f.want, "the viewer's own mode and the one published")
	require.Less(t, read, int64(pad), "the listing read %d bytes from the database", read)
}

// BenchmarkListModes lists 200 published modes and 10 of the viewer's own,
// each released from a draft of 48 KiB, beside the same listing of drafts
// of 64 bytes: the draft's size should not change what a listing costs.
// db-bytes/op is what one listing read from PostgreSQL.
func BenchmarkListModes(b *testing.B) {
	for _, pad := range []int{64, 48 << 10} {
		b.Run(fmt.Sprintf("drafts-%dB", pad), func(b *testing.B) {
			f := newListingFixture(b, 200, 10, pad)
			b.ReportAllocs()
			b.ResetTimer()
			b.ReportMetric(float64(benchListing(b, f, b.N)), "db-bytes/op")
		})
	}
}

// benchListing lists n times and returns the bytes one listing read from
// PostgreSQL, the last time.
func benchListing(tb testing.TB, f *listingFixture, n int) int64 {
	tb.Helper()
	ctx := context.Background()
	var read int64
	for range n {
		ms, r, err := f.list(ctx)
		require.NoError(tb, err)
		require.Len(tb, ms, f.want)
		read = r
	}
	return read
}

// The benchmark's measuring code, once at a small size: it lists every mode,
// and the drafts' size does not show in what it reads.
func TestBenchListModesSmoke(t *testing.T) {
	t.Parallel()
	const pad = 16 << 10
	read := benchListing(t, newListingFixture(t, 3, 2, pad), 1)
	require.Less(t, read, int64(pad), "five modes of %d-byte drafts", pad)
}
