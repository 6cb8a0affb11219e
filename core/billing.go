package core

// Billing rules: what one call costs at its source, the ceiling on its bill,
// and the bill itself. These are pure functions over Micros; the store only
// moves the amounts they compute (see Admission.PlaceHold and Admission.SettleCall).

// DefaultCeilingFloor is the lowest default per-call bill ceiling: a call's
// ceiling is the higher of this and the price of the mode called, unless the
// key carries its own.
const DefaultCeilingFloor Micros = 2 * MicrosPerUSD

// Platform fee rates in parts per million of a call's real cost.
const (
	// FeeRateServicePPM is the fee on calls run on the service's own
	// provider keys: 5%.
	FeeRateServicePPM int64 = 50_000
	// FeeRateBYOKPPM is the fee on calls run on the caller's own provider
	// key (bring-your-own-key): 0.5%.
	FeeRateBYOKPPM int64 = 5_000
)

const ppm = 1_000_000

// ceilDiv divides a non-negative numerator by a positive denominator,
// rounding up.
func ceilDiv(n, d int64) int64 { return (n + d - 1) / d }

// CallCost is the real cost at the source of one engine call: the engine's
// price per million input and output tokens times the tokens, rounded up to
// the micro-dollar once, on the call's total. Negative token counts count as
// zero.
func CallCost(tokensIn, tokensOut int, e *Engine) Micros {
	in, out := int64(max(tokensIn, 0)), int64(max(tokensOut, 0))
	num := in*int64(max(e.InputPerMTok, 0)) + out*int64(max(e.OutputPerMTok, 0))
	return Micros(ceilDiv(num, ppm))
}

// FeeRate is the platform fee rate, in parts per million, of a call run on
// the caller's own key (byok) or on the service's keys.
func FeeRate(byok bool) int64 {
	if byok {
		return FeeRateBYOKPPM
	}
	return FeeRateServicePPM
}

// CallFee is the platform fee on one call: realCost × ratePPM / 10⁶, rounded
// up to the micro-dollar.
//
// The fee is rounded per call, not on the sum, so that every receipt row's
// fee_usd is exactly real_cost_usd × fee_rate rounded up and the rows add up
// to the bill's platform fee with nothing left over. The price of that
// choice is at most one micro-dollar per call.
func CallFee(realCost Micros, ratePPM int64) Micros {
	if realCost <= 0 || ratePPM <= 0 {
		return 0
	}
	return Micros(ceilDiv(int64(realCost)*ratePPM, ppm))
}

// Ceiling is a call's bill ceiling: the key's own ceiling when it has one
// (keyCeiling > 0), otherwise the higher of floor and the mode's price;
// then lowered, never raised, by the call's panel.max_cost_usd when given
// and positive.
func Ceiling(keyCeiling, modePrice, floor Micros, maxCost *Micros) Micros {
	c := keyCeiling
	if c <= 0 {
		c = max(floor, modePrice)
	}
	if maxCost != nil && *maxCost > 0 && *maxCost < c {
		c = *maxCost
	}
	return c
}

// CostBudget is the most real cost (CallCost, summed) a call's engine calls
// may spend so that its bill stays within ceiling: the largest c with
// c + CallFee(c, FeeRateServicePPM) + surcharge ≤ ceiling, that is the token
// charge, the platform fee and the surcharge of c spent on the service's
// keys. It is 0 when ceiling is 0 or less (no ceiling: there is no budget)
// and when the surcharge leaves nothing for tokens; a caller tells the two
// apart by the ceiling it passed.
//
// The fee is taken once on the total, as if c were one call. The bill rounds
// it up per call (CallFee), so calls that together spend exactly the budget
// may bill up to one micro-dollar per call above the ceiling; and a call run
// on the caller's own key bills no token charge, so for it the budget is
// conservative. The cap credit absorbs the former: the bill never passes the
// ceiling. The price of budgeting on the total is those micro-dollars, in
// exchange for a budget that does not depend on how many calls spend it.
func CostBudget(ceiling, surcharge Micros) Micros {
	avail := int64(ceiling - max(surcharge, 0))
	if ceiling <= 0 || avail <= 0 {
		return 0
	}
	// c = ⌊avail·P/(P+r)⌋ fits: c·(1+r/P) ≤ avail, and rounding the fee up
	// adds less than one micro-dollar to a whole number, so it still does.
	// c+1 does not: (c+1)·(1+r/P) > avail already before rounding. Written
	// as avail − ⌈avail·r/(P+r)⌉ so that avail·r, not avail·P, is the
	// largest product (exact to $180M).
	return Micros(avail - ceilDiv(avail*FeeRateServicePPM, ppm+FeeRateServicePPM))
}

// CeilingFor is the lowest ceiling whose CostBudget with surcharge is at
// least realCost: the bill of realCost spent as one call on the service's
// keys, plus the surcharge (ComputeBill's rules, uncapped). A call whose
// ceiling is below CeilingFor(the least real cost its question needs,
// its surcharge) cannot be answered within its ceiling.
func CeilingFor(realCost, surcharge Micros) Micros {
	return BillInput{Surcharge: surcharge}.CeilingFor(realCost)
}

// CeilingFor is the lowest ceiling of a call billed as in is (its
// Surcharge and RealCost; Calls and Ceiling are ignored) whose budget
// (Budget) is at least realCost: the bill of realCost spent as one call on
// the service's keys, uncapped.
func (in BillInput) CeilingFor(realCost Micros) Micros {
	in.Calls, in.Ceiling = []BilledCall{{RealCost: realCost}}, 0
	return ComputeBill(in).Billed
}

// Budget is the most real cost the engine calls of a call billed as in
// is (its Surcharge, Ceiling and RealCost; Calls are ignored) may spend so
// that its bill stays within Ceiling: CostBudget(Ceiling, Surcharge); at
// real cost, whose bill is the token charge alone, the whole ceiling.
func (in BillInput) Budget() Micros {
	if in.RealCost {
		return max(in.Ceiling, 0)
	}
	return CostBudget(in.Ceiling, in.Surcharge)
}

// BilledCall is one engine call as the bill sees it.
type BilledCall struct {
	// RealCost is the call's cost at its source (CallCost).
	RealCost Micros
	// BYOK is true when the call ran on the caller's own provider key: its
	// token cost is the caller's to pay the provider, so only the reduced
	// platform fee is billed.
	BYOK bool
}

// BillInput is what a call's bill is computed from.
type BillInput struct {
	// Calls are every engine call of the request: seats, and the staff
	// (judge, synthesis, grounding), which always run on the service's keys.
	Calls []BilledCall
	// Surcharge is the mode's surcharge for the classified depth, or its
	// express surcharge for an express-lane call.
	Surcharge Micros
	// Ceiling is the call's bill ceiling (see Ceiling). A ceiling of zero or
	// less means none: the bill is not capped. That is deliberately not "cap
	// at zero" — a caller that forgets to set it gets a settlement refused
	// for going above the hold, not a silently free call.
	Ceiling Micros
	// RealCost bills the calls at their real cost alone: the token charge,
	// with no platform fee and no surcharge, whatever Surcharge says. It is
	// set for plan usage (a connected app's call; see Plan): the spec's fee
	// "applies to API calls only … never on plan usage", and a plan pays no
	// API surcharge. The ceiling still caps the bill.
	RealCost bool
}

// FeeRate is the platform fee rate, in parts per million, ComputeBill
// applies to one call of a bill billed as in is: FeeRate(byok), or 0 at
// real cost.
func (in BillInput) FeeRate(byok bool) int64 {
	if in.RealCost {
		return 0
	}
	return FeeRate(byok)
}

// Bill is the money of one call. Billed = TokenCharge + PlatformFee +
// Surcharge − CapCredit, and Billed never exceeds the ceiling.
type Bill struct {
	// TokenCharge is the real cost of the calls on the service's keys.
	TokenCharge Micros
	// PlatformFee is the sum of every call's CallFee.
	PlatformFee Micros
	Surcharge   Micros
	// CapCredit is the amount over the ceiling credited back; 0 under it.
	CapCredit Micros
	Billed    Micros
	// Capped is true when the bill went over the ceiling.
	Capped bool
}

// ComputeBill applies the billing rules: the token charge is the real cost of
// the calls on the service's keys (a BYOK call's token cost is not billed);
// the platform fee is 5% of each service-key call's real cost and 0.5% of
// each BYOK call's, rounded up per call (see CallFee); the bill is token
// charge + platform fee + surcharge; above the ceiling the excess is
// credited back and the caller pays the ceiling. At real cost
// (BillInput.RealCost) the fee and the surcharge are 0: the bill is the
// token charge, capped the same way. Negative amounts count as zero.
func ComputeBill(in BillInput) Bill {
	var b Bill
	for _, c := range in.Calls {
		cost := max(c.RealCost, 0)
		if !c.BYOK {
			b.TokenCharge += cost
		}
		b.PlatformFee += CallFee(cost, in.FeeRate(c.BYOK))
	}
	if !in.RealCost {
		b.Surcharge = max(in.Surcharge, 0)
	}
	b.Billed = b.TokenCharge + b.PlatformFee + b.Surcharge
	if in.Ceiling > 0 && b.Billed > in.Ceiling {
		b.Capped = true
		b.CapCredit = b.Billed - in.Ceiling
		b.Billed = in.Ceiling
	}
	return b
}

// Benchmark runs (POST /v1/tests, POST /v1/certify) are charged up front,
// once, when they are launched; what their questions cost to run is the
// service's.

// TestDiscountPPM is the discount of a test run's questions on the mode's
// standard price, in parts per million: 25% off.
const TestDiscountPPM int64 = 250_000

// TestQuestionPrice is the price of one question of a test run whose
// standard price is standard — what a call of the question's depth to the
// mode at its tier is projected to bill, surcharge, token charge and
// platform fee (core/modes.StandardPrice) — 25% off. The discount is
// rounded up to the micro-dollar, so the price rounds down: at most one
// micro-dollar per question in the caller's favour, and a run's total is
// exactly its questions' prices added up.
func TestQuestionPrice(standard Micros) Micros {
	if standard <= 0 {
		return 0
	}
	return standard - Micros(ceilDiv(int64(standard)*TestDiscountPPM, ppm))
}

// TestStandardFor is the least standard price whose test question price
// (TestQuestionPrice) is at least cost: what a call must bill for a test
// question sold 25% off it to pay cost. TestQuestionPrice(p) is
// ⌊p·(1 − d)⌋ (d the discount), at least cost exactly when p ≥
// cost/(1 − d), so this is ⌈cost·10⁶/(10⁶ − TestDiscountPPM)⌉. A cost of
// zero or less needs none.
func TestStandardFor(cost Micros) Micros {
	if cost <= 0 {
		return 0
	}
	return Micros(ceilDiv(int64(cost)*ppm, ppm-TestDiscountPPM))
}

// CertificationPrice is the flat price of a certification run: $50.
const CertificationPrice = 50 * MicrosPerUSD
