package core

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Catalog is the set of engines and modes a deployment serves. It is built
// once from configuration and is read-only afterwards, so it is safe for
// concurrent use.
type Catalog struct {
	engines map[string]*Engine
	modes   []*Mode
	byID    map[string]*Mode // slug and ticker → mode
	hashes  map[string]string
}

// FieldError is a configuration error that names the offending field.
type FieldError struct {
	Field string // a path such as "modes[1].seats.plus[0].engine"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

var (
	slugRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)
	tickerRe = regexp.MustCompile(`^[A-Z]{4}:[A-Z]{4}$`)
)

// NewCatalog checks engines and modes against each other and returns the
// catalog, or the first *FieldError found.
func NewCatalog(engines []Engine, modes []Mode) (*Catalog, error) {
	c := &Catalog{engines: map[string]*Engine{}, byID: map[string]*Mode{}, hashes: map[string]string{}}
	for i := range engines {
		e := engines[i]
		f := fmt.Sprintf("engines[%d]", i)
		switch {
		case e.ID == "":
			return nil, &FieldError{f + ".id", "required"}
		case c.engines[e.ID] != nil:
			return nil, &FieldError{f + ".id", fmt.Sprintf("engine %q is defined twice", e.ID)}
		case e.Family == "":
			return nil, &FieldError{f + ".family", "required"}
		case !e.MaxTier.Valid():
			return nil, &FieldError{f + ".max_tier", fmt.Sprintf("%q is not experience, plus or pro", e.MaxTier)}
		case e.InputPerMTok < 0 || e.OutputPerMTok < 0:
			return nil, &FieldError{f + ".price", "prices cannot be negative"}
		case e.Adapter == "":
			return nil, &FieldError{f + ".adapter", "required"}
		case e.Timeout < 0:
			return nil, &FieldError{f + ".timeout", "cannot be negative"}
		}
		if e.Model == "" {
			if _, after, ok := strings.Cut(e.ID, "/"); ok {
				e.Model = after
			} else {
				e.Model = e.ID
			}
		}
		switch e.Carrier {
		case "":
			e.Carrier = CarrierNative
		case CarrierNative, CarrierWasm, CarrierGoPlugin:
		default:
			return nil, &FieldError{f + ".carrier", fmt.Sprintf("%q is not native, wasm or goplugin", e.Carrier)}
		}
		if e.Carrier != CarrierNative && e.Plugin == "" {
			return nil, &FieldError{f + ".plugin", "required when carrier is " + e.Carrier + " (the plugin-manifest entry to load)"}
		}
		c.engines[e.ID] = &e
	}
	for i := range modes {
		m := modes[i]
		if err := c.addMode(i, &m); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Catalog) addMode(i int, m *Mode) error {
	f := fmt.Sprintf("modes[%d]", i)
	switch {
	case m.Key == "":
		return &FieldError{f + ".key", "required"}
	case !slugRe.MatchString(m.ID):
		return &FieldError{f + ".id", fmt.Sprintf("%q is not a lowercase slug (a-z, 0-9, -)", m.ID)}
	case m.Ticker != "" && !tickerRe.MatchString(m.Ticker):
		return &FieldError{f + ".ticker", fmt.Sprintf("%q is not four letters, a colon and four letters (e.g. CNCL:STND)", m.Ticker)}
	case c.byID[m.ID] != nil:
		return &FieldError{f + ".id", fmt.Sprintf("mode id %q is used twice", m.ID)}
	case m.Ticker != "" && c.byID[m.Ticker] != nil:
		return &FieldError{f + ".ticker", fmt.Sprintf("ticker %q is used twice", m.Ticker)}
	case m.Name == "":
		return &FieldError{f + ".name", "required"}
	}
	if err := CheckMode(c.engines, m, f); err != nil {
		return err
	}
	c.modes = append(c.modes, m)
	c.byID[m.ID] = m
	if m.Ticker != "" {
		c.byID[m.Ticker] = m
	}
	c.hashes[m.ID] = m.ConfigHash(c.engines)
	return nil
}

// CheckMode checks what a mode runs — seat rows, staff, critique, rounds,
// quorum, thresholds and prices — against the engines it names, and returns
// the first *FieldError, its field under prefix. Configured modes and
// authored modes (core/modes) both pass through it, so the two can never
// disagree on what a runnable mode is.
func CheckMode(engines map[string]*Engine, m *Mode, prefix string) error {
	f := prefix
	d := m.Deliberation
	if len(d.Seats) == 0 {
		return &FieldError{f + ".seats", "at least one tier needs a seat row"}
	}
	for tier, row := range d.Seats {
		tf := fmt.Sprintf("%s.seats.%s", f, tier)
		if !tier.Valid() {
			return &FieldError{tf, fmt.Sprintf("%q is not experience, plus or pro", tier)}
		}
		if len(row) == 0 {
			return &FieldError{tf, "a seat row needs at least one seat"}
		}
		for j, s := range row {
			sf := fmt.Sprintf("%s[%d]", tf, j)
			if err := checkEngineRef(engines, sf+".engine", s.Engine, tier, true); err != nil {
				return err
			}
			if err := checkEngineRef(engines, sf+".backup", s.Backup, tier, false); err != nil {
				return err
			}
		}
	}
	for role, s := range d.Staff {
		sf := fmt.Sprintf("%s.staff.%s", f, role)
		if !slices.Contains(StaffRoles, role) {
			return &FieldError{sf, fmt.Sprintf("unknown staff role %q (%s)", role, strings.Join(StaffRoles, ", "))}
		}
		if err := checkEngineRef(engines, sf+".engine", s.Engine, "", true); err != nil {
			return err
		}
		if err := checkEngineRef(engines, sf+".backup", s.Backup, "", false); err != nil {
			return err
		}
	}
	if !slices.Contains(Critiques, d.Critique) {
		return &FieldError{f + ".critique", fmt.Sprintf("%q is not %s", d.Critique, strings.Join(Critiques, ", "))}
	}
	if d.MaxRounds < 1 || d.MaxRounds > MaxRounds {
		return &FieldError{f + ".max_rounds", fmt.Sprintf("must be 1 to %d", MaxRounds)}
	}
	if d.Quorum < 0 {
		return &FieldError{f + ".quorum", "cannot be negative"}
	}
	for tier, row := range d.Seats {
		if d.Quorum > len(row) {
			return &FieldError{f + ".quorum", fmt.Sprintf("%d is more than the %d seats of tier %s", d.Quorum, len(row), tier)}
		}
	}
	if d.ExpressThreshold < 0 || d.ExpressThreshold > 1 {
		return &FieldError{f + ".express_threshold", "must be between 0 and 1"}
	}
	if d.HedgePercentile < 0 || d.HedgePercentile > 100 {
		return &FieldError{f + ".hedge_percentile", "must be between 0 and 100"}
	}
	for depth, v := range m.Pricing.SurchargeByDepth {
		if _, ok := ParseDepth(string(depth)); !ok {
			return &FieldError{f + ".pricing.surcharge_by_depth", fmt.Sprintf("unknown depth %q (light, medium, deep)", depth)}
		}
		if v < 0 {
			return &FieldError{f + ".pricing.surcharge_by_depth." + string(depth), "cannot be negative"}
		}
	}
	return nil
}

func checkEngineRef(engines map[string]*Engine, field, id string, tier Tier, required bool) error {
	if id == "" {
		if required {
			return &FieldError{field, "required"}
		}
		return nil
	}
	e, ok := engines[id]
	if !ok {
		return &FieldError{field, fmt.Sprintf("unknown engine %q", id)}
	}
	if tier != "" && e.MaxTier.Rank() < tier.Rank() {
		return &FieldError{field, fmt.Sprintf("engine %q only fills seats up to tier %s", id, e.MaxTier)}
	}
	return nil
}

// Resolve finds a mode by its slug or its ticker, exactly as listed.
func (c *Catalog) Resolve(id string) (*Mode, bool) {
	m, ok := c.byID[id]
	return m, ok
}

// Modes lists every mode in configuration order.
func (c *Catalog) Modes() []*Mode { return c.modes }

// Engine finds an engine by id.
func (c *Catalog) Engine(id string) (*Engine, bool) {
	e, ok := c.engines[id]
	return e, ok
}

// Engines returns the engines by id. The map must not be modified.
func (c *Catalog) Engines() map[string]*Engine { return c.engines }

// ConfigHash is the mode's mode_config_hash.
func (c *Catalog) ConfigHash(m *Mode) string { return c.hashes[m.ID] }

// Families lists the provider families the mode is designed to seat (primary
// engines of every tier's row), sorted.
func (c *Catalog) Families(m *Mode) []string {
	set := map[string]bool{}
	for _, row := range m.Deliberation.Seats {
		for _, s := range row {
			if e, ok := c.engines[s.Engine]; ok {
				set[strings.ToLower(e.Family)] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
