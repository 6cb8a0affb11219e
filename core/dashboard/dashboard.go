// Package dashboard is what the organisation dashboard's pages read and
// change beyond people and sign-in (core/people): the overview's money and
// spend, the receipts, the journal, the audit trail, key limits and the
// test of a bring-your-own-key credential. Every method asks the same
// policy as REST and MCP, with the person's role: a role granted an action
// on "own" things sees and changes only what the person made (their keys'
// and sessions' calls).
//
// It adds nothing to a billed call: spend by day is read from the
// aggregates the spend job writes from the journal, and when a key was
// last used from what the replicas flush from memory.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/expiring"
)

// Receipts reads one receipt as REST and MCP do; *calls.Service
// satisfies it.
type Receipts interface {
	Receipt(ctx context.Context, p *access.Principal, requestID string) (*calls.ReceiptAnswer, error)
}

// Tester makes a cheap real call through the egress layer on an
// organisation's own credential for a provider; byok.Tester satisfies it.
type Tester interface {
	TestProvider(ctx context.Context, orgID, provider string) (*core.ProviderTest, error)
}

// Deps are what the service reads from.
type Deps struct {
	// Access asks the policy and knows the deployment's limits. Required.
	Access *access.Service
	// Store is the dashboard's reads. Required.
	Store core.Dashboard
	// Keys lists keys. Required.
	Keys core.Keys
	// Receipts reads a receipt. Required.
	Receipts Receipts
	// Credentials lists BYOK credentials; nil when BYOK is off.
	Credentials core.ProviderCredentials
	// Tester tests a BYOK credential; nil when none can be tested.
	Tester Tester
	// MaxInputTokens is the deployment's input limit of a key that sets
	// none (calls.Config.MaxInputTokens). Required.
	MaxInputTokens int
	// ActivationAllowance is what an unverified organisation may spend.
	ActivationAllowance core.Micros
	// SpendCacheFor is how long the overview's spend sums are reused
	// (they change only when the spend job runs); 0 reads them on every
	// view. Defaults to 0; serve sets 10s.
	SpendCacheFor time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// Service serves the dashboard's reads and changes. Safe for concurrent
// use.
type Service struct {
	d Deps

	cache *expiring.Map[string, spendEntry] // the overview's spend, by organisation, person and first day
}

// New returns the service.
func New(d Deps) (*Service, error) {
	if d.Access == nil || d.Store == nil || d.Keys == nil || d.Receipts == nil || d.MaxInputTokens <= 0 {
		return nil, errors.New("dashboard: Access, Store, Keys, Receipts and MaxInputTokens are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{d: d, cache: expiring.New[string, spendEntry](maxCached)}, nil
}

// ActivationAllowance is what an unverified organisation may spend.
func (s *Service) ActivationAllowance() core.Micros { return s.d.ActivationAllowance }

// scope is who a person's usage reads cover: "" for the whole
// organisation (usage.read on any), the person's id for their own.
func (s *Service) scope(ctx context.Context, p *access.Principal) (string, error) {
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionUsageRead, ""); err == nil {
		return "", nil
	}
	if p.Person == nil {
		return "", core.Errorf(core.CodeForbidden, "Only a person may read the organisation's usage.")
	}
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionUsageRead, p.Person.ID); err != nil {
		return "", err
	}
	return p.Person.ID, nil
}

// Days is how many days the overview's spend covers.
const Days = 30

// Overview is the overview page's figures.
type Overview struct {
	// Own is true when the figures are the person's own usage (their
	// keys' and sessions'), not the organisation's.
	Own bool
	// Money is nil for a role that may not read the balance.
	Money *core.MoneyState
	// Days are the Days days covered, oldest first (UTC midnights).
	Days []time.Time
	// ByMode and ByKey are the spend of those days by mode and by key,
	// each keeping its TopSeries largest labels apart.
	ByMode, ByKey *core.SpendSeries
	// Billed and Charges are the days' totals.
	Billed  core.Micros
	Charges int64
	Recent  []*core.ReceiptRow
}

// TopSeries is how many modes or keys the overview's charts keep apart;
// the rest are summed as one.
const TopSeries = 6

// Overview reads the overview of p's organisation (or p's own usage).
func (s *Service) Overview(ctx context.Context, p *access.Principal) (*Overview, error) {
	who, err := s.scope(ctx, p)
	if err != nil {
		return nil, err
	}
	o := &Overview{Own: who != ""}
	if s.d.Access.AuthorizeOwned(ctx, p, core.ActionJournalRead, "") == nil {
		if o.Money, err = s.d.Store.MoneyState(ctx, p.Org.ID); err != nil {
			return nil, err
		}
	}
	today := s.d.Now().UTC().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, -(Days - 1))
	for d := from; !d.After(today); d = d.AddDate(0, 0, 1) {
		o.Days = append(o.Days, d)
	}
	q := core.SpendQuery{OrgID: p.Org.ID, From: from, To: today.AddDate(0, 0, 1), PersonID: who, Top: TopSeries}
	if o.ByMode, o.ByKey, err = s.spend(ctx, q); err != nil {
		return nil, err
	}
	for _, t := range o.ByMode.Totals {
		o.Billed += t.Billed
		o.Charges += t.Charges
	}
	if o.Recent, err = s.d.Store.ListReceipts(ctx, &core.ReceiptQuery{OrgID: p.Org.ID, PersonID: who, Limit: 5}); err != nil {
		return nil, err
	}
	return o, nil
}

// spendEntry is a cached pair of spend series.
type spendEntry struct {
	byMode, byKey *core.SpendSeries
}

// spend reads q's spend by mode and by key, from the cache while it is
// fresher than Deps.SpendCacheFor. The sums change only when the spend
// job runs (every jobs.spend_interval), so a person reloading the
// overview, or several looking at it, costs one read of the month's rows
// per organisation and person every few seconds rather than one per view.
func (s *Service) spend(ctx context.Context, q core.SpendQuery) (byMode, byKey *core.SpendSeries, err error) {
	key := q.OrgID + "/" + q.PersonID + "/" + q.From.Format(time.DateOnly)
	now := s.d.Now()
	if e, ok := s.cache.Get(key, now); ok {
		return e.byMode, e.byKey, nil
	}
	q.By = core.SpendByMode
	if byMode, err = s.d.Store.SpendSeries(ctx, &q); err != nil {
		return nil, nil, err
	}
	q.By = core.SpendByKey
	if byKey, err = s.d.Store.SpendSeries(ctx, &q); err != nil {
		return nil, nil, err
	}
	if s.d.SpendCacheFor > 0 {
		s.cache.Put(key, spendEntry{byMode: byMode, byKey: byKey}, now.Add(s.d.SpendCacheFor), now)
	}
	return byMode, byKey, nil
}

// maxCached bounds the spend cache's entries.
const maxCached = 10_000

// ReceiptsPage is a page of receipts and where the next one starts.
type ReceiptsPage struct {
	Own  bool
	Rows []*core.ReceiptRow
	// Next is the cursor of the next page; nil on the last.
	Next *core.ReceiptCursor
}

// Receipts lists p's organisation's receipts matching q (a member's own
// only), newest first.
func (s *Service) Receipts(ctx context.Context, p *access.Principal, q core.ReceiptQuery) (*ReceiptsPage, error) {
	who, err := s.scope(ctx, p)
	if err != nil {
		return nil, err
	}
	q.OrgID, q.PersonID = p.Org.ID, who
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	q.Limit = limit + 1
	rows, err := s.d.Store.ListReceipts(ctx, &q)
	if err != nil {
		return nil, err
	}
	page := &ReceiptsPage{Own: who != "", Rows: rows}
	if len(rows) > limit {
		page.Rows = rows[:limit]
		last := page.Rows[limit-1]
		page.Next = &core.ReceiptCursor{CreatedAt: last.CreatedAt, RequestID: last.RequestID}
	}
	return page, nil
}

// Receipt reads one receipt as GET /v1/receipts does, for a person who
// may read it: any of the organisation's for usage.read on any, else one
// of their own calls.
func (s *Service) Receipt(ctx context.Context, p *access.Principal, requestID string) (*calls.ReceiptAnswer, error) {
	who, err := s.scope(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionReceiptsRead, ""); err != nil {
		return nil, err
	}
	a, err := s.d.Receipts.Receipt(ctx, p, requestID)
	if err != nil {
		return nil, err
	}
	if who != "" && (a.Receipt == nil || a.Receipt.PersonID != who) {
		return nil, core.Errorf(core.CodeReceiptNotFound, "No receipt of yours for request %s.", requestID)
	}
	return a, nil
}

// JournalPage is a page of the journal and where the next one starts.
type JournalPage struct {
	Rows []*core.JournalRow
	// Next is the posting id the next page starts below; 0 on the last.
	Next int64
}

// Journal lists p's organisation's postings matching q, newest first
// (journal.read).
func (s *Service) Journal(ctx context.Context, p *access.Principal, q core.JournalQuery) (*JournalPage, error) {
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionJournalRead, ""); err != nil {
		return nil, err
	}
	q.OrgID = p.Org.ID
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	q.Limit = limit + 1
	rows, err := s.d.Store.ListJournal(ctx, &q)
	if err != nil {
		return nil, err
	}
	page := &JournalPage{Rows: rows}
	if len(rows) > limit {
		page.Rows = rows[:limit]
		page.Next = page.Rows[limit-1].PostingID
	}
	return page, nil
}

// EachPosting calls fn with every posting of p's organisation matching q,
// newest first, a page at a time (journal.read): the export.
func (s *Service) EachPosting(ctx context.Context, p *access.Principal, q core.JournalQuery, fn func(*core.JournalRow) error) error {
	q.Limit = 500
	for {
		page, err := s.Journal(ctx, p, q)
		if err != nil {
			return err
		}
		for _, r := range page.Rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		if page.Next == 0 {
			return nil
		}
		q.Before = page.Next
	}
}

// Money reads p's organisation's balance, trial and activation
// (journal.read).
func (s *Service) Money(ctx context.Context, p *access.Principal) (*core.MoneyState, error) {
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionJournalRead, ""); err != nil {
		return nil, err
	}
	return s.d.Store.MoneyState(ctx, p.Org.ID)
}

// AuditPage is a page of the audit trail and where the next one starts.
type AuditPage struct {
	Rows []*core.AuditEntry
	Next *core.AuditCursor
}

// Audit lists p's organisation's audit trail matching f, newest first
// (audit.read).
func (s *Service) Audit(ctx context.Context, p *access.Principal, f core.AuditFilter) (*AuditPage, error) {
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionAuditRead, ""); err != nil {
		return nil, err
	}
	f.OrgID = p.Org.ID
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	f.Limit = limit + 1
	rows, err := s.d.Store.ListAudit(ctx, &f)
	if err != nil {
		return nil, err
	}
	page := &AuditPage{Rows: rows}
	if len(rows) > limit {
		page.Rows = rows[:limit]
		last := page.Rows[limit-1]
		page.Next = &core.AuditCursor{At: last.At, ID: last.ID}
	}
	return page, nil
}

// LimitError is a key limit refused, with the field it concerns.
type LimitError struct {
	Field   string // "rpm", "concurrency" or "max_input_tokens"
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// Ceilings are the highest limits a key of p's organisation may be given
// from the dashboard: the organisation's own (its concurrency, the
// deployment's defaults), or the key's own when the operator set it
// higher.
func (s *Service) Ceilings(k *core.Key, org *core.Org) (rpm, concurrency, maxInput int) {
	kp := &access.Principal{Key: k, Org: org}
	bare := &access.Principal{Key: &core.Key{}, Org: org}
	return max(s.d.Access.RPM(kp), s.d.Access.RPM(bare)),
		max(s.d.Access.SlotLimit(kp), s.d.Access.SlotLimit(bare)),
		max(k.MaxInputTokens, s.d.MaxInputTokens)
}

// Limits are a key's limits now: its own where set, else its
// organisation's or the deployment's.
func (s *Service) Limits(k *core.Key, org *core.Org) (rpm, concurrency, maxInput int) {
	kp := &access.Principal{Key: k, Org: org}
	maxInput = k.MaxInputTokens
	if maxInput <= 0 {
		maxInput = s.d.MaxInputTokens
	}
	return s.d.Access.RPM(kp), s.d.Access.SlotLimit(kp), maxInput
}

// SetKeyLimits sets a key's rate, concurrency and input limits (keys.limits:
// owners any key, members their own), each between 1 and its ceiling
// (Ceilings); nil leaves one as it is. A key's cost ceiling is the
// operator's alone and cannot be changed here.
func (s *Service) SetKeyLimits(ctx context.Context, p *access.Principal, keyID string, l *core.KeyLimits) (*core.Key, error) {
	if p.Org == nil {
		return nil, core.Errorf(core.CodeForbidden, "You are not in an organisation yet.")
	}
	keys, err := s.d.Keys.ListKeys(ctx, p.Org.ID)
	if err != nil {
		return nil, err
	}
	var k *core.Key
	for _, x := range keys {
		if x.ID == keyID {
			k = x
		}
	}
	if k == nil {
		return nil, core.ErrNotFound
	}
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionKeysLimits, k.PersonID); err != nil {
		return nil, err
	}
	if k.RevokedAt != nil {
		return nil, &LimitError{Field: "rpm", Message: "This key is revoked: its limits no longer matter."}
	}
	rpm, conc, maxInput := s.Ceilings(k, p.Org)
	for _, f := range []struct {
		field, what string
		v           *int
		ceiling     int
	}{{"rpm", "requests per minute", l.RPM, rpm}, {"concurrency", "calls at once", l.Concurrency, conc},
		{"max_input_tokens", "input tokens per call", l.MaxInputTokens, maxInput}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > f.ceiling {
			return nil, &LimitError{Field: f.field, Message: fmt.Sprintf("Give a whole number of %s from 1 to %d, the most this organisation has.", f.what, f.ceiling)}
		}
	}
	return s.d.Store.SetKeyLimits(core.WithActor(ctx, p.Actor()), p.Org.ID, keyID, l)
}

// ProviderState is one bring-your-own-key provider as the BYOK page shows
// it: whether the organisation set it, and for owners its hint and dates.
type ProviderState struct {
	Provider   string
	Set        bool
	Credential *core.ProviderCredential // nil unless set and p may manage BYOK
}

// Providers lists every BYOK provider with whether p's organisation set
// it; the credentials' hints and dates only for a role that may manage
// them (byok.write). Enabled is false when the service has no sealing key.
func (s *Service) Providers(ctx context.Context, p *access.Principal) (states []*ProviderState, manage, enabled bool, err error) {
	if p.Org == nil {
		return nil, false, false, core.Errorf(core.CodeForbidden, "You are not in an organisation yet.")
	}
	manage = s.d.Access.AuthorizeOwned(ctx, p, core.ActionBYOKWrite, "") == nil
	set := map[string]*core.ProviderCredential{}
	if s.d.Credentials != nil {
		list, err := s.d.Credentials.ListProviderCredentials(ctx, p.Org.ID)
		if err != nil {
			return nil, false, false, err
		}
		for _, c := range list {
			set[c.Provider] = c
		}
	}
	for _, prov := range core.BYOKProviders {
		st := &ProviderState{Provider: prov, Set: set[prov] != nil}
		if manage {
			st.Credential = set[prov]
		}
		states = append(states, st)
	}
	return states, manage, s.d.Credentials != nil, nil
}

// TestProvider makes a cheap real call on p's organisation's own
// credential for provider (byok.write).
func (s *Service) TestProvider(ctx context.Context, p *access.Principal, provider string) (*core.ProviderTest, error) {
	if err := s.d.Access.AuthorizeOwned(ctx, p, core.ActionBYOKWrite, ""); err != nil {
		return nil, err
	}
	if !core.ValidBYOKProvider(provider) {
		return nil, core.ErrNotFound
	}
	if s.d.Tester == nil {
		return &core.ProviderTest{Problem: "No engine of this provider is configured on this service, so there is nothing to test the key with."}, nil
	}
	return s.d.Tester.TestProvider(ctx, p.Org.ID, provider)
}
