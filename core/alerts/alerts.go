// Package alerts is spend alerts (docs/dashboard.md#spend-alerts): an
// organisation's owners set a monthly budget with the percentages of it
// they want to hear about (80, 90, 100) and a balance floor; the alert job
// notices each threshold crossed, records it once per calendar month (UTC),
// shows it on the overview and, when a webhook URL is set, posts it there
// signed with the organisation's webhook secret (docs/api.md#spend-alert-webhooks).
//
// Nothing here runs on a billed call: the job reads the balance and the
// month's spend the spend job already summed, on its own schedule.
package alerts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/publicnet"
)

// Kind is what an alert watches.
type Kind string

const (
	// KindMonthlySpend is the month's spend passing a percentage of the
	// monthly budget (or of the monthly quota, when no budget is set).
	KindMonthlySpend Kind = "monthly_spend"
	// KindBalance is the balance falling below the balance floor.
	KindBalance Kind = "balance"
)

// Settings are an organisation's alert settings.
type Settings struct {
	OrgID string
	// Budget is the monthly budget the percentages are of; nil means the
	// organisation's monthly quota, when it has one.
	Budget *core.Micros
	// Percents are the thresholds of the monthly spend, ascending, each
	// 1 to 1000.
	Percents []int
	// Floor is the balance floor; nil means none.
	Floor *core.Micros
	// WebhookURL is where crossings are posted; "" means nowhere.
	WebhookURL string
	// Secret signs the webhook's posts; set with WebhookURL. Never shown
	// after the page that set it.
	Secret string
}

// Crossing is one threshold crossed: recorded once per organisation, kind,
// threshold and calendar month.
type Crossing struct {
	// ID is the event's id (evt_…), the same on every delivery attempt.
	ID    string
	OrgID string
	Kind  Kind
	// Percent is the monthly-spend threshold crossed; 0 for the balance
	// floor.
	Percent int
	// Period is the first instant of the calendar month (UTC).
	Period time.Time
	// Limit is the budget (monthly spend) or the floor (balance) it was
	// measured against; Value the month's spend or the balance seen.
	Limit, Value core.Micros
	At           time.Time
	// Delivered is when the webhook receiver acknowledged it; nil while it
	// has not (or when no webhook was set).
	Delivered *time.Time
}

// Observation is what the alert job reads of one organisation with
// alerts: its settings, the budget the percentages are of (the budget, or
// the quota), the month's spend and the balance.
type Observation struct {
	Settings
	// Base is the amount the percentages are of: Budget, or the monthly
	// quota when no budget is set; nil when neither is.
	Base    *core.Micros
	Spent   core.Micros
	Balance core.Micros
}

// Crossed are the thresholds o has crossed at now: one crossing for each
// percentage whose share of Base the month's spend has reached, and one
// when the balance is below the floor. Recording them (once per month,
// whatever else was recorded) is the store's part.
func Crossed(o *Observation, now time.Time) []*Crossing {
	period := core.MonthStart(now)
	var out []*Crossing
	if o.Base != nil && *o.Base > 0 {
		for _, p := range o.Percents {
			// spent/base >= p/100, in integers: no rounding at the edge.
			if int64(o.Spent)*100 >= int64(*o.Base)*int64(p) {
				out = append(out, &Crossing{OrgID: o.OrgID, Kind: KindMonthlySpend, Percent: p, Period: period,
					Limit: *o.Base, Value: o.Spent, At: now})
			}
		}
	}
	if o.Floor != nil && o.Balance < *o.Floor {
		out = append(out, &Crossing{OrgID: o.OrgID, Kind: KindBalance, Period: period, Limit: *o.Floor, Value: o.Balance, At: now})
	}
	return out
}

// Store keeps the settings and the crossings; pgstore implements it.
type Store interface {
	// AlertSettings reads orgID's settings; a zero Settings when it has
	// none.
	AlertSettings(ctx context.Context, orgID string) (*Settings, error)
	// SetAlertThresholds sets the budget, percentages and floor, keeping
	// the webhook.
	SetAlertThresholds(ctx context.Context, s *Settings) error
	// SetAlertWebhook sets (url non-empty) or clears the webhook URL and
	// its secret.
	SetAlertWebhook(ctx context.Context, orgID, url, secret string) error
	// AlertCrossings lists orgID's crossings since from, newest first.
	AlertCrossings(ctx context.Context, orgID string, from time.Time) ([]*Crossing, error)
}

// Deps are what the service needs.
type Deps struct {
	// Access asks the policy. Required.
	Access *access.Service
	// Store keeps the settings. Required.
	Store Store
	// AllowLoopback accepts a webhook URL on a loopback host, over http
	// too. For tests only (alerts.allow_loopback_webhooks).
	AllowLoopback bool
	// Now defaults to time.Now.
	Now func() time.Time
}

// Service reads and changes alert settings for the pages: owners only
// (the policy's org.settings). Safe for concurrent use.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) (*Service, error) {
	if d.Access == nil || d.Store == nil {
		return nil, errors.New("alerts: Access and Store are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{d: d}, nil
}

// FieldError is a refused value, with the field it concerns.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.Message }

// MaxPercent bounds a threshold: 1000% of the budget.
const MaxPercent = 1000

func (s *Service) authorize(ctx context.Context, p *access.Principal) error {
	return s.d.Access.AuthorizeOwned(ctx, p, core.ActionOrgSettings, "")
}

// Settings reads p's organisation's alert settings, without the secret.
func (s *Service) Settings(ctx context.Context, p *access.Principal) (*Settings, error) {
	if err := s.authorize(ctx, p); err != nil {
		return nil, err
	}
	st, err := s.d.Store.AlertSettings(ctx, p.Org.ID)
	if err != nil {
		return nil, err
	}
	st.Secret = ""
	return st, nil
}

// SetThresholds sets the monthly budget (nil: the monthly quota), the
// percentages of it (none: no spend alerts) and the balance floor (nil:
// none); audited as org.settings_changed, as every change here is.
func (s *Service) SetThresholds(ctx context.Context, p *access.Principal, budget *core.Micros, percents []int, floor *core.Micros) error {
	if err := s.authorize(ctx, p); err != nil {
		return err
	}
	if budget != nil && *budget <= 0 {
		return &FieldError{Field: "budget", Message: "A monthly budget must be more than $0; leave it empty to use the monthly quota."}
	}
	if floor != nil && *floor <= 0 {
		return &FieldError{Field: "floor", Message: "A balance floor must be more than $0; leave it empty for none."}
	}
	ps := slices.Clone(percents)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	for _, v := range ps {
		if v < 1 || v > MaxPercent {
			return &FieldError{Field: "percents", Message: "Each percentage must be a whole number from 1 to 1000."}
		}
	}
	if len(ps) > 10 {
		return &FieldError{Field: "percents", Message: "Set at most 10 percentages."}
	}
	return s.d.Store.SetAlertThresholds(core.WithActor(ctx, p.Actor()), &Settings{OrgID: p.Org.ID, Budget: budget, Percents: ps, Floor: floor})
}

// SetWebhook sets the webhook URL and returns its new secret, to be shown
// once; a URL must be https and must not name a private host.
func (s *Service) SetWebhook(ctx context.Context, p *access.Principal, raw string) (secret string, err error) {
	if err := s.authorize(ctx, p); err != nil {
		return "", err
	}
	if err := s.checkURL(raw); err != nil {
		return "", err
	}
	secret = NewSecret()
	if err := s.d.Store.SetAlertWebhook(core.WithActor(ctx, p.Actor()), p.Org.ID, strings.TrimSpace(raw), secret); err != nil {
		return "", err
	}
	return secret, nil
}

// RemoveWebhook clears the webhook URL and its secret: crossings are still
// recorded and shown, and posted nowhere.
func (s *Service) RemoveWebhook(ctx context.Context, p *access.Principal) error {
	if err := s.authorize(ctx, p); err != nil {
		return err
	}
	return s.d.Store.SetAlertWebhook(core.WithActor(ctx, p.Actor()), p.Org.ID, "", "")
}

// Crossings lists the crossings of p's organisation in the current month,
// newest first (owners).
func (s *Service) Crossings(ctx context.Context, p *access.Principal) ([]*Crossing, error) {
	if err := s.authorize(ctx, p); err != nil {
		return nil, err
	}
	return s.d.Store.AlertCrossings(ctx, p.Org.ID, core.MonthStart(s.d.Now()))
}

// checkURL refuses a webhook URL that is not an absolute https URL, or
// whose host is plainly not public. A name that resolves to a private
// address is refused when the post is dialled (publicnet.Dialer).
func (s *Service) checkURL(raw string) error {
	fe := func(msg string) error { return &FieldError{Field: "webhook_url", Message: msg} }
	raw = strings.TrimSpace(raw)
	if len(raw) > 2000 {
		return fe("The URL is too long (at most 2,000 characters).")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fe("Enter an absolute URL, such as https://hooks.example.com/conclave.")
	}
	if u.User != nil || u.Fragment != "" {
		return fe("The URL may carry neither a user name nor a #fragment.")
	}
	if s.d.AllowLoopback && loopback(u.Hostname()) {
		return nil // a test's receiver
	}
	if u.Scheme != "https" {
		return fe("The URL must start with https:// — alerts are sent only over TLS.")
	}
	if publicnet.ObviouslyPrivate(u.Hostname()) {
		return fe("That host is not a public address; alerts are sent only to public internet addresses.")
	}
	return nil
}

// loopback reports whether host names the loopback interface.
func loopback(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	return host == "localhost"
}

// NewSecret is a new webhook secret: "whsec_" and 32 random bytes in
// base64url.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}
