package modes

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Rows are the spec's seat rows by tier as written: SeatsByTier, or the one
// Seats row for MinTier and every tier above it.
func (s *Spec) Rows() map[core.Tier][]Seat {
	rows := map[core.Tier][]Seat{}
	if len(s.SeatsByTier) > 0 {
		for t, row := range s.SeatsByTier {
			rows[t] = row
		}
		return rows
	}
	for _, t := range core.Tiers {
		if s.MinTier.Valid() && t.Rank() >= s.MinTier.Rank() {
			rows[t] = s.Seats
		}
	}
	return rows
}

// ToMode converts a valid spec into the mode the engine runs, for the
// organisation author.OrgTicker names: ticker OWNR:MODE, id "ownr-mode".
// Auto seats are picked from the pool here (see PickAuto), so the mode —
// and its mode_config_hash — names the engines that will run. The result
// has passed core.CheckMode; a spec it fails is an error naming the field.
func ToMode(s *Spec, author Author, engines map[string]*core.Engine, available func(id string) bool) (*core.Mode, error) {
	if available == nil {
		available = func(string) bool { return true }
	}
	seats := map[core.Tier][]core.Seat{}
	for t, row := range s.Rows() {
		r, err := resolveRow(t, row, s, engines, available)
		if err != nil {
			return nil, err
		}
		seats[t] = r
	}
	staff := map[string]core.Staff{}
	for role, st := range s.Staff {
		staff[role] = core.Staff{Engine: st.Engine, Backup: st.Backup}
	}
	key := strings.ToLower(s.Ticker)
	m := &core.Mode{
		Key:                  key,
		ID:                   strings.ToLower(author.OrgTicker) + "-" + key,
		Ticker:               author.OrgTicker + ":" + s.Ticker,
		Name:                 s.Name,
		Description:          s.Description,
		UseWhen:              s.UseWhen,
		OwnerOrg:             author.OrgID,
		IncludesDeliberation: true,
		Deliberation: core.Deliberation{
			Seats:             seats,
			Staff:             staff,
			Critique:          s.Critique,
			MaxRounds:         s.MaxRounds,
			Quorum:            s.Quorum,
			StragglerDeadline: time.Duration(math.Round(s.StragglerDeadlineS*1000)) * time.Millisecond,
			ExpressThreshold:  s.ExpressThreshold,
			CostCeiling:       core.Micros(s.CostCeilingUSD),
			HedgePercentile:   s.HedgePercentile,
		},
	}
	if c := s.APICommercial; c != nil {
		m.PriceTier = c.PriceTier
		for d, v := range c.SurchargeByDepth {
			depth, ok := core.ParseDepth(d)
			if !ok {
				return nil, &core.FieldError{Field: "api_commercial.q_surcharge_by_depth." + d, Msg: "unknown depth"}
			}
			if m.Pricing.SurchargeByDepth == nil {
				m.Pricing.SurchargeByDepth = map[core.Depth]core.Micros{}
			}
			m.Pricing.SurchargeByDepth[depth] = core.Micros(v)
		}
		if c.SurchargeUSD != nil {
			v := core.Micros(*c.SurchargeUSD)
			m.Pricing.Surcharge = &v
		}
		if c.ExpressUSD != nil {
			v := core.Micros(*c.ExpressUSD)
			m.Pricing.Express = &v
		}
	}
	if err := core.CheckMode(engines, m, "mode"); err != nil {
		return nil, err
	}
	return m, nil
}

func resolveRow(t core.Tier, row []Seat, s *Spec, engines map[string]*core.Engine, available func(string) bool) ([]core.Seat, error) {
	auto := 0
	for _, seat := range row {
		if seat.Engine == AutoEngine {
			auto++
		}
	}
	if auto == 0 {
		out := make([]core.Seat, len(row))
		for i, seat := range row {
			out[i] = core.Seat{Engine: seat.Engine, Backup: seat.Backup}
		}
		return out, nil
	}
	if auto != len(row) {
		return nil, &core.FieldError{Field: "seats." + string(t), Msg: "a row mixes auto and fixed seats"}
	}
	return PickAuto(t, len(row), s.Pool, s.FamilyDiversity, engines, available)
}

// PickAuto fills n auto seats at tier t from pool, deterministically. The
// eligible engines are the pool's known, available engines that reach t,
// in pool order. The first pass takes the first engine of each new family
// until the row holds diversity families; the second fills the remaining
// seats in pool order. The engines left over are the backups, handed out in
// order (seat i gets leftover i mod their number), so every seat has one.
func PickAuto(t core.Tier, n int, pool []string, diversity int, engines map[string]*core.Engine, available func(string) bool) ([]core.Seat, error) {
	var eligible []string
	seen := map[string]bool{}
	for _, id := range pool {
		e, ok := engines[id]
		if ok && !seen[id] && available(id) && e.MaxTier.Rank() >= t.Rank() {
			eligible = append(eligible, id)
			seen[id] = true
		}
	}
	if len(eligible) <= n {
		return nil, &core.FieldError{Field: "pool", Msg: fmt.Sprintf("%d eligible engines at tier %s cannot fill %d auto seats and leave a backup", len(eligible), t, n)}
	}
	picked := map[string]bool{}
	var primaries []string
	families := map[string]bool{}
	for _, id := range eligible {
		if len(primaries) == n || len(families) >= diversity {
			break
		}
		if f := strings.ToLower(engines[id].Family); !families[f] {
			families[f] = true
			picked[id] = true
			primaries = append(primaries, id)
		}
	}
	for _, id := range eligible {
		if len(primaries) == n {
			break
		}
		if !picked[id] {
			picked[id] = true
			primaries = append(primaries, id)
		}
	}
	var spare []string
	for _, id := range eligible {
		if !picked[id] {
			spare = append(spare, id)
		}
	}
	out := make([]core.Seat, n)
	for i, id := range primaries {
		out[i] = core.Seat{Engine: id, Backup: spare[i%len(spare)]}
	}
	return out, nil
}
