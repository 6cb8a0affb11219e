package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestCallCost(t *testing.T) {
	t.Parallel()
	// $3 in / $15 out per million tokens.
	sonnet := &core.Engine{InputPerMTok: 3_000_000, OutputPerMTok: 15_000_000}
	// $0.15 in / $0.60 out.
	mini := &core.Engine{InputPerMTok: 150_000, OutputPerMTok: 600_000}
	tests := []struct {
		name    string
		in, out int
		e       *core.Engine
		want    core.Micros
	}{
		{"nothing", 0, 0, sonnet, 0},
		{"one million in", 1_000_000, 0, sonnet, 3_000_000},
		{"one million out", 0, 1_000_000, sonnet, 15_000_000},
		{"exact", 1000, 500, sonnet, 3_000 + 7_500},
		{"one token rounds up to a micro", 1, 0, mini, 1},             // 0.15 µ$
		{"rounded once on the total", 3, 3, mini, 3},                  // 0.45 + 1.8 = 2.25 µ$
		{"just above a whole micro", 1_000_001, 0, sonnet, 3_000_003}, // 3_000_003 exactly
		{"fraction above a whole micro", 7, 0, mini, 2},               // 1.05 µ$
		{"negative tokens count as zero", -50, 10, sonnet, 150},
		{"free engine", 5000, 5000, &core.Engine{}, 0},
		{"8000-token prompt to a seat", 8000, 1200, sonnet, 24_000 + 18_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, core.CallCost(tt.in, tt.out, tt.e))
		})
	}
}

func TestCallFee(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cost core.Micros
		rate int64
		want core.Micros
	}{
		{0, core.FeeRateServicePPM, 0},
		{1_000_000, core.FeeRateServicePPM, 50_000},
		{1_000_000, core.FeeRateBYOKPPM, 5_000},
		{1, core.FeeRateServicePPM, 1}, // 0.05 µ$ rounds up
		{20, core.FeeRateServicePPM, 1},
		{21, core.FeeRateServicePPM, 2}, // 1.05 µ$
		{199, core.FeeRateBYOKPPM, 1},
		{201, core.FeeRateBYOKPPM, 2},
		{-5, core.FeeRateServicePPM, 0},
	}
	for _, tt := range tests {
		require.Equalf(t, tt.want, core.CallFee(tt.cost, tt.rate), "fee on %d at %d ppm", tt.cost, tt.rate)
	}
	require.Equal(t, core.FeeRateBYOKPPM, core.FeeRate(true))
	require.Equal(t, core.FeeRateServicePPM, core.FeeRate(false))
}

func TestCeiling(t *testing.T) {
	t.Parallel()
	ptr := func(m core.Micros) *core.Micros { return &m }
	floor := core.DefaultCeilingFloor
	tests := []struct {
		name           string
		key, modePrice core.Micros
		maxCost        *core.Micros
		want           core.Micros
	}{
		{"floor above a cheap mode", 0, 150_000, nil, 2_000_000},
		{"mode price above the floor", 0, 5_000_000, nil, 5_000_000},
		{"key ceiling wins over both", 1_000_000, 5_000_000, nil, 1_000_000},
		{"key ceiling may be above the default", 9_000_000, 150_000, nil, 9_000_000},
		{"max cost lowers", 0, 150_000, ptr(500_000), 500_000},
		{"max cost never raises", 0, 150_000, ptr(3_000_000), 2_000_000},
		{"max cost lowers a key ceiling", 9_000_000, 0, ptr(4_000_000), 4_000_000},
		{"max cost equal is a no-op", 0, 0, ptr(2_000_000), 2_000_000},
		{"non-positive max cost is ignored", 0, 0, ptr(0), 2_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, core.Ceiling(tt.key, tt.modePrice, floor, tt.maxCost))
		})
	}
}

func TestCostBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		ceiling, surcharge core.Micros
		want               core.Micros
	}{
		{"no ceiling, no budget", 0, 100_000, 0},
		{"negative ceiling, no budget", -5, 0, 0},
		{"surcharge takes it all", 100_000, 100_000, 0},
		{"surcharge above the ceiling", 100_000, 150_000, 0},
		{"one micro left buys nothing: its fee rounds up to one more", 100_001, 100_000, 0},
		{"two micros left buy one", 2, 0, 1}, // 1 + fee 1
		{"fee of one up to 20", 21, 0, 20},   // 20 + 1
		{"21 would cost 23", 22, 0, 20},      // 21 + fee 2 > 22
		{"a dollar, no surcharge", 1_000_000, 0, 952_380},
		{"default ceiling, medium standard surcharge", 2_000_000, 100_000, 1_809_523},
		{"negative surcharge counts as zero", 1_000_000, -50, 952_380},
		{"large ceiling stays exact", 100_000 * core.MicrosPerUSD, 0, 95_238_095_238},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := core.CostBudget(tt.ceiling, tt.surcharge)
			require.Equal(t, tt.want, got)
			if tt.ceiling <= 0 || got == 0 {
				return
			}
			// The budget is the largest real cost whose bill fits.
			require.LessOrEqual(t, core.CeilingFor(got, tt.surcharge), tt.ceiling)
			require.Greater(t, core.CeilingFor(got+1, tt.surcharge), tt.ceiling)
		})
	}
}

// CostBudget and CeilingFor are inverses: the lowest ceiling that budgets a
// real cost gives back at least that cost, and one micro-dollar less gives
// back less.
func TestCeilingForInvertsCostBudget(t *testing.T) {
	t.Parallel()
	for _, surcharge := range []core.Micros{0, 1, 50_000, 320_000} {
		for c := core.Micros(1); c < 5_000; c += 7 {
			ceiling := core.CeilingFor(c, surcharge)
			require.Equal(t, c+core.CallFee(c, core.FeeRateServicePPM)+surcharge, ceiling)
			require.GreaterOrEqual(t, core.CostBudget(ceiling, surcharge), c, "ceiling %d, surcharge %d", ceiling, surcharge)
			require.Less(t, core.CostBudget(ceiling-1, surcharge), c, "ceiling %d, surcharge %d", ceiling-1, surcharge)
		}
	}
	require.Equal(t, core.Micros(320_000), core.CeilingFor(0, 320_000), "no real cost: the surcharge alone")
}

func TestComputeBill(t *testing.T) {
	t.Parallel()
	svc := func(c core.Micros) core.BilledCall { return core.BilledCall{RealCost: c} }
	byok := func(c core.Micros) core.BilledCall { return core.BilledCall{RealCost: c, BYOK: true} }
	tests := []struct {
		name string
		in   core.BillInput
		want core.Bill
	}{
		{
			name: "service keys only",
			in:   core.BillInput{Calls: []core.BilledCall{svc(100_000), svc(200_000), svc(40_000)}, Surcharge: 100_000, Ceiling: 2_000_000},
			want: core.Bill{TokenCharge: 340_000, PlatformFee: 5_000 + 10_000 + 2_000, Surcharge: 100_000, Billed: 457_000},
		},
		{
			name: "BYOK seats: token cost not billed, 0.5% fee",
			in:   core.BillInput{Calls: []core.BilledCall{byok(100_000), byok(200_000), svc(40_000)}, Surcharge: 50_000, Ceiling: 2_000_000},
			want: core.Bill{TokenCharge: 40_000, PlatformFee: 500 + 1_000 + 2_000, Surcharge: 50_000, Billed: 93_500},
		},
		{
			name: "fee rounded up per call",
			in:   core.BillInput{Calls: []core.BilledCall{svc(21), svc(21), byok(201)}, Ceiling: 2_000_000},
			// 1.05 → 2, 1.05 → 2, 1.005 → 2 (on the sum it would be 2.1+1.005 → 4).
			want: core.Bill{TokenCharge: 42, PlatformFee: 6, Billed: 48},
		},
		{
			name: "capped: pays the ceiling, the rest is credited",
			in:   core.BillInput{Calls: []core.BilledCall{svc(1_500_000), svc(600_000)}, Surcharge: 150_000, Ceiling: 2_000_000},
			want: core.Bill{TokenCharge: 2_100_000, PlatformFee: 75_000 + 30_000, Surcharge: 150_000, CapCredit: 355_000, Billed: 2_000_000, Capped: true},
		},
		{
			name: "exactly at the ceiling is not capped",
			in:   core.BillInput{Calls: []core.BilledCall{svc(1_000_000)}, Surcharge: 950_000, Ceiling: 2_000_000},
			want: core.Bill{TokenCharge: 1_000_000, PlatformFee: 50_000, Surcharge: 950_000, Billed: 2_000_000},
		},
		{
			name: "express lane: one call, express surcharge",
			in:   core.BillInput{Calls: []core.BilledCall{svc(3_000)}, Surcharge: 10_000, Ceiling: 500_000},
			want: core.Bill{TokenCharge: 3_000, PlatformFee: 150, Surcharge: 10_000, Billed: 13_150},
		},
		{
			name: "no calls: surcharge only",
			in:   core.BillInput{Surcharge: 50_000, Ceiling: 2_000_000},
			want: core.Bill{Surcharge: 50_000, Billed: 50_000},
		},
		{
			name: "no ceiling set: not capped",
			in:   core.BillInput{Calls: []core.BilledCall{svc(5_000_000)}},
			want: core.Bill{TokenCharge: 5_000_000, PlatformFee: 250_000, Billed: 5_250_000},
		},
		{
			name: "negative inputs count as zero",
			in:   core.BillInput{Calls: []core.BilledCall{svc(-7)}, Surcharge: -1, Ceiling: 2_000_000},
			want: core.Bill{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := core.ComputeBill(tt.in)
			require.Equal(t, tt.want, got)
			requireBillInvariants(t, tt.in, got)
		})
	}
}

func requireBillInvariants(t *testing.T, in core.BillInput, b core.Bill) {
	t.Helper()
	if in.Ceiling > 0 {
		require.LessOrEqual(t, b.Billed, in.Ceiling, "billed above the ceiling")
	}
	require.Equal(t, b.TokenCharge+b.PlatformFee+b.Surcharge-b.CapCredit, b.Billed, "billed is the sum of its parts")
	require.Equal(t, b.CapCredit > 0, b.Capped, "capped exactly when there is a cap credit")
	for _, m := range []core.Micros{b.TokenCharge, b.PlatformFee, b.Surcharge, b.CapCredit, b.Billed} {
		require.GreaterOrEqual(t, m, core.Micros(0))
	}
	// The fee is the sum of the per-call fees a receipt shows, never below
	// the exact 5% / 0.5% and at most a micro per call above it.
	var exactNum int64
	var perCall core.Micros
	for _, c := range in.Calls {
		exactNum += int64(max(c.RealCost, 0)) * core.FeeRate(c.BYOK)
		perCall += core.CallFee(c.RealCost, core.FeeRate(c.BYOK))
	}
	require.Equal(t, perCall, b.PlatformFee, "platform fee is the sum of the receipt rows' fees")
	require.GreaterOrEqual(t, int64(b.PlatformFee)*1_000_000, exactNum)
	require.LessOrEqual(t, int64(b.PlatformFee), (exactNum+999_999)/1_000_000+int64(len(in.Calls)))
}

// FuzzComputeBill checks the bill's invariants on arbitrary inputs within
// realistic ranges (each amount up to $1,000,000).
func FuzzComputeBill(f *testing.F) {
	f.Add(int64(100_000), int64(200_000), int64(40_000), uint8(0b010), int64(100_000), int64(2_000_000))
	f.Add(int64(1_500_000), int64(600_000), int64(0), uint8(0), int64(150_000), int64(2_000_000))
	f.Add(int64(21), int64(21), int64(201), uint8(0b100), int64(0), int64(1))
	f.Add(int64(-3), int64(0), int64(7), uint8(0b111), int64(-9), int64(0))
	f.Fuzz(func(t *testing.T, c1, c2, c3 int64, byok uint8, surcharge, ceiling int64) {
		const limit = 1_000_000 * int64(core.MicrosPerUSD)
		clamp := func(v int64) core.Micros { return core.Micros(v % limit) }
		in := core.BillInput{
			Calls: []core.BilledCall{
				{RealCost: clamp(c1), BYOK: byok&1 != 0},
				{RealCost: clamp(c2), BYOK: byok&2 != 0},
				{RealCost: clamp(c3), BYOK: byok&4 != 0},
			},
			Surcharge: clamp(surcharge),
			Ceiling:   clamp(ceiling),
		}
		requireBillInvariants(t, in, core.ComputeBill(in))
	})
}

func TestTestQuestionPrice(t *testing.T) {
	t.Parallel()
	tests := []struct{ standard, want core.Micros }{
		{50_000, 37_500},   // $0.05 light → $0.0375
		{100_000, 75_000},  // $0.10 medium
		{150_000, 112_500}, // $0.15 deep
		{1, 0},             // a quarter of a micro-dollar off rounds up: the price rounds down
		{3, 2},
		{0, 0},
		{-7, 0},
	}
	for _, tt := range tests {
		require.Equalf(t, tt.want, core.TestQuestionPrice(tt.standard), "price of a question at %d", tt.standard)
	}
	require.Equal(t, core.USD(50), core.CertificationPrice)
}

func TestDepthPrice(t *testing.T) {
	t.Parallel()
	flat := core.Micros(200_000)
	byDepth := core.Pricing{SurchargeByDepth: map[core.Depth]core.Micros{core.DepthLight: 50_000}}
	v, ok := byDepth.DepthPrice(core.DepthLight)
	require.True(t, ok)
	require.Equal(t, core.Micros(50_000), v)
	_, ok = byDepth.DepthPrice(core.DepthDeep)
	require.False(t, ok, "no price for the band and no flat surcharge")
	require.Zero(t, byDepth.SurchargeFor(core.DepthDeep, false))

	byDepth.Surcharge = &flat
	v, ok = byDepth.DepthPrice(core.DepthDeep)
	require.True(t, ok, "the flat surcharge prices a band the mode does not name")
	require.Equal(t, flat, v)
	require.Equal(t, flat, byDepth.SurchargeFor(core.DepthDeep, false))
}

// Plan usage is billed at real cost: the token charge alone — no platform
// fee on any call, no surcharge — capped at the ceiling like any bill; its
// budget is the whole ceiling, and the least ceiling a question needs is
// its real cost.
func TestComputeBillRealCost(t *testing.T) {
	t.Parallel()
	calls := []core.BilledCall{{RealCost: 300_000}, {RealCost: 200_000}, {RealCost: 100_000, BYOK: true}}
	api := core.ComputeBill(core.BillInput{Calls: calls, Surcharge: 150_000, Ceiling: 2_000_000})
	require.Equal(t, core.Bill{TokenCharge: 500_000, PlatformFee: 15_000 + 10_000 + 500, Surcharge: 150_000,
		Billed: 675_500}, api, "the API's bill, for comparison")

	plan := core.BillInput{Calls: calls, Surcharge: 150_000, Ceiling: 2_000_000, RealCost: true}
	require.Equal(t, core.Bill{TokenCharge: 500_000, Billed: 500_000}, core.ComputeBill(plan))
	require.Zero(t, plan.FeeRate(false))
	require.Zero(t, plan.FeeRate(true))
	require.Equal(t, core.FeeRateServicePPM, core.BillInput{}.FeeRate(false))

	plan.Ceiling = 400_000
	require.Equal(t, core.Bill{TokenCharge: 500_000, CapCredit: 100_000, Billed: 400_000, Capped: true},
		core.ComputeBill(plan), "capped at the ceiling: the hold")

	require.Equal(t, core.Micros(400_000), plan.Budget(), "the whole ceiling buys tokens")
	require.Equal(t, core.CostBudget(400_000, 150_000), core.BillInput{Surcharge: 150_000, Ceiling: 400_000}.Budget())
	require.Zero(t, core.BillInput{RealCost: true}.Budget(), "no ceiling, no budget")
	require.Equal(t, core.Micros(123_456), plan.CeilingFor(123_456))
	require.Equal(t, core.CeilingFor(123_456, 150_000), core.BillInput{Surcharge: 150_000}.CeilingFor(123_456))
}
