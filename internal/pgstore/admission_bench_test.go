package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// BenchmarkAdmitSettle measures a billed call's two trips to Postgres, one
// after the other on one connection at a time: admit_call (rate, slot,
// idempotency claim, hold) and settle_call with a receipt of one seat and
// two staff rows (and without one, to show the receipt's share), beside a
// trivial query on the same pool (the floor of a round trip); and both
// trips of many calls of one organisation at once (one-org-parallel, with
// the write-ahead log it writes per call: wal_bytes/call).
func BenchmarkAdmitSettle(b *testing.B) {
	ctx := context.Background()
	// Postgres as deployed: every synchronous commit waits for the disk.
	pool, err := pgxpool.New(ctx, pgtest.NewDurableDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Bench"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	hash := hashOf("bench")
	b.Run("admit", func(b *testing.B) {
		for range b.N {
			id := core.NewID("req")
			a, err := s.Admit(ctx, &core.AdmitParams{KeyID: "key_bench", PerMinute: 100_000_000, OrgID: org.ID, RequestID: id,
				SlotLimit: 5, Lease: time.Minute, IdempotencyKey: id, RequestHash: hash, Hold: core.PlaceHoldParams{Amount: 2_000_000}})
			if err != nil || a.Refused != nil {
				b.Fatal(err, a)
			}
			b.StopTimer()
			if err := s.ReleaseHold(ctx, a.Hold.ID, org.ID); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	for _, withReceipt := range []bool{true, false} {
		name := "settle"
		if !withReceipt {
			name = "settle-no-receipt"
		}
		b.Run(name, func(b *testing.B) {
			holds := make([]*core.Hold, b.N)
			for i := range b.N {
				id := core.NewID("req")
				a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: id, SlotLimit: 1_000_000, Lease: time.Minute,
					IdempotencyKey: id, RequestHash: hash, Hold: core.PlaceHoldParams{Amount: 2_000_000}})
				if err != nil || a.Refused != nil {
					b.Fatal(err, a)
				}
				holds[i] = a.Hold
			}
			b.ResetTimer()
			for i := range b.N {
				r := benchReceipt(holds[i].RequestID)
				rc := r
				if !withReceipt {
					rc = nil
				}
				if _, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: holds[i].ID, OrgID: org.ID, Billed: r.Billed, Receipt: rc,
					IdempotencyKey: holds[i].RequestID, ClaimState: core.ClaimSucceeded}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Many calls of one organisation and one key at once (16 callers on
	// this 2-core machine): every admission updates the key's rate row and
	// the balance row, every settlement the balance row again, so how long
	// each transaction keeps those rows locked bounds the organisation's
	// rate of calls.
	b.Run("one-org-parallel", func(b *testing.B) {
		b.SetParallelism(8)
		walStart := walPosition(b, pool)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := core.NewID("req")
				a, err := s.Admit(ctx, &core.AdmitParams{KeyID: "key_bench_parallel", PerMinute: 100_000_000, OrgID: org.ID, RequestID: id,
					SlotLimit: 1_000_000, Lease: time.Minute, IdempotencyKey: id, RequestHash: hash, Hold: core.PlaceHoldParams{Amount: 2_000_000}})
				if err != nil || a.Refused != nil {
					b.Error(err, a)
					return
				}
				r := benchReceipt(id)
				if _, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: a.Hold.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r,
					IdempotencyKey: id, ClaimState: core.ClaimSucceeded}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		var wal int64
		if err := pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", walStart).Scan(&wal); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(wal)/float64(b.N), "wal_bytes/call")
	})
	b.Run("select-1", func(b *testing.B) {
		for range b.N {
			if err := s.Ping(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// walPosition is the server's current write-ahead log position.
func walPosition(b *testing.B, pool *pgxpool.Pool) string {
	var lsn string
	if err := pool.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

func benchReceipt(requestID string) *core.Receipt {
	now := time.Now()
	lat := int64(300)
	call := func(role string) core.ReceiptCall {
		return core.ReceiptCall{Role: role, ModelUsed: "sim/atlas", TokensIn: 40, TokensOut: 120, LatencyMS: &lat,
			StartedAt: now, EndedAt: now, Source: core.SourceService, RealCost: 1_300, FeeRatePPM: core.FeeRateServicePPM,
			Fee: core.CallFee(1_300, core.FeeRateServicePPM), Content: "An answer of a few words."}
	}
	rounds := 1
	return &core.Receipt{RequestID: requestID, Mode: "m", ModeKey: "m", ModeConfigHash: "h", Status: "succeeded",
		Billed: 50_000 + 1_300 + 65, TokenCharge: 1_300, Surcharge: 50_000, PlatformFee: 65, Payer: "org", Lane: core.LaneExpress,
		Rounds: &rounds, SeatCount: 1, CompletedAt: &now, LatencyMS: &lat, Response: []byte(`{"id":"chatcmpl-x","choices":[]}`),
		Seats: []core.ReceiptCall{call("seat-1")}, Staff: []core.ReceiptCall{call("judge"), call("synthesis")}}
}
