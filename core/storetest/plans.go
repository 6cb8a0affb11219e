package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunPlanAdmission is the section of core.Admission for a person's plan
// usage (AdmitParams.PersonID): the person's slots, counted apart from the
// organisation's and given back wherever those are; and the monthly
// allowance, which lowers a hold to what is left of it and refuses the call
// when nothing (or less than the least it asks) is left, without ever
// holding more than the allowance, however many calls ask at once.
func RunPlanAdmission[S interface {
	core.Orgs
	core.Ledger
	core.Admission
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()
	admit := func(t *testing.T, s core.Admission, p core.AdmitParams) *core.AdmitResult {
		t.Helper()
		a, err := s.Admit(ctx, &p)
		require.NoError(t, err)
		return a
	}
	allowance := func(m core.Micros) *core.Micros { return &m }

	// A person has as many calls in flight as their plan's concurrency, on
	// top of the organisation's slots; a call over it is refused holding
	// nothing; a slot given back (ReleaseSlot, releasing the hold,
	// settling it) is free again; people have their own slots.
	t.Run("PersonSlots", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		call := func(person, requestID string) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, SlotLimit: 5, Lease: time.Minute,
				IdempotencyKey: requestID, RequestHash: hashOf(requestID), Hold: core.PlaceHoldParams{Amount: 1_000},
				PersonID: person, PersonSlots: 2, PersonAllowance: allowance(core.USD(1))})
		}
		first, second := call("person_a", "req_1"), call("person_a", "req_2")
		require.NoError(t, first.Refused)
		require.NoError(t, second.Refused)
		refused := call("person_a", "req_3")
		require.ErrorIs(t, refused.Refused, core.ErrPersonBusy)
		require.Nil(t, refused.Hold)
		require.Equal(t, core.Micros(2_000), balance(t, s, org.ID).Held, "the refused call holds no money")

		require.NoError(t, call("person_b", "req_b1").Refused, "another person has their own slots")
		require.NoError(t, admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: "req_key", SlotLimit: 5, Lease: time.Minute}).Refused,
			"the refused call kept none of the organisation's slots: 3 of 5 are taken")
		require.ErrorIs(t, admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: "req_key2", SlotLimit: 4, Lease: time.Minute}).Refused,
			core.ErrNoSlot, "and the person's calls took the organisation's slots too")
		require.NoError(t, s.ReleaseSlot(ctx, org.ID, "req_key"))

		require.NoError(t, s.ReleaseSlot(ctx, org.ID, "req_1"))
		third := call("person_a", "req_4")
		require.NoError(t, third.Refused, "ReleaseSlot frees the person's slot")
		require.ErrorIs(t, call("person_a", "req_5").Refused, core.ErrPersonBusy)
		require.NoError(t, s.ReleaseHold(ctx, second.Hold.ID, org.ID))
		fourth := call("person_a", "req_6")
		require.NoError(t, fourth.Refused, "releasing the hold frees the person's slot")
		_, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: third.Hold.ID, OrgID: org.ID, Billed: 500})
		require.NoError(t, err)
		require.NoError(t, call("person_a", "req_7").Refused, "settling the call frees the person's slot")
		require.ErrorIs(t, call("person_a", "req_8").Refused, core.ErrPersonBusy)
	})

	// A call refused the organisation's slot, or its idempotency key, gives
	// back the person's slot it took first.
	t.Run("RefusedCallGivesBackThePersonsSlot", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		call := func(requestID, key string, orgSlots int) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, SlotLimit: orgSlots, Lease: time.Minute,
				IdempotencyKey: key, RequestHash: hashOf(requestID), Hold: core.PlaceHoldParams{Amount: 1_000},
				PersonID: "person_a", PersonSlots: 1, PersonAllowance: allowance(core.USD(1))})
		}
		require.NoError(t, admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: "req_other", SlotLimit: 1, Lease: time.Minute}).Refused)
		require.ErrorIs(t, call("req_1", "k1", 1).Refused, core.ErrNoSlot)
		require.NoError(t, s.ReleaseSlot(ctx, org.ID, "req_other"))
		held := call("req_2", "k2", 1)
		require.NoError(t, held.Refused, "the person's slot was given back with the refusal")
		require.NoError(t, s.ReleaseHold(ctx, held.Hold.ID, org.ID))
		require.NoError(t, s.ReleaseClaim(ctx, org.ID, "k2", "req_2"))

		require.NoError(t, admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: "req_claim", Lease: time.Minute,
			IdempotencyKey: "k3", RequestHash: hashOf("req_claim")}).Refused)
		require.ErrorIs(t, call("req_3", "k3", 0).Refused, core.ErrClaimed)
		require.NoError(t, call("req_4", "k4", 0).Refused, "a call refused its key gave the person's slot back")
	})

	// RenewLeases keeps a live call's person slot; one not renewed lapses
	// and is taken by the person's next call.
	t.Run("PersonSlotLease", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		call := func(requestID string, lease time.Duration) error {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, Lease: lease,
				PersonID: "person_a", PersonSlots: 1}).Refused
		}
		require.NoError(t, call("req_live", 500*time.Millisecond))
		require.NoError(t, s.RenewLeases(ctx, []string{"req_live"}, time.Hour))
		time.Sleep(600 * time.Millisecond)
		require.ErrorIs(t, call("req_next", time.Minute), core.ErrPersonBusy, "the renewed slot is kept")
		require.NoError(t, s.ReleaseSlot(ctx, org.ID, "req_live"))

		require.NoError(t, call("req_dead", 300*time.Millisecond))
		require.Eventually(t, func() bool {
			a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: "req_after", Lease: time.Minute,
				PersonID: "person_a", PersonSlots: 1})
			return err == nil && a.Refused == nil
		}, 10*time.Second, 20*time.Millisecond, "the slot of a call not renewed lapses")
	})

	// The hold is lowered, never raised, to what is left of the person's
	// allowance this month: settled bills and live holds count, released
	// holds do not; when nothing is left, or less than the least the call
	// asks, it is refused with what the month already took.
	t.Run("AllowanceLowersTheHold", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		call := func(person, requestID string, amount, least core.Micros) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, Lease: time.Minute,
				Hold: core.PlaceHoldParams{Amount: amount}, PersonID: person, PersonAllowance: allowance(1_000_000), MinHold: least})
		}
		a := call("person_a", "req_1", 600_000, 0)
		require.NoError(t, a.Refused)
		require.Equal(t, core.Micros(600_000), a.Hold.Amount, "within the allowance: the amount asked")
		b := call("person_a", "req_2", 600_000, 0)
		require.NoError(t, b.Refused)
		require.Equal(t, core.Micros(400_000), b.Hold.Amount, "lowered to what is left")
		require.Equal(t, core.Micros(1_000_000), balance(t, s, org.ID).Held, "the balance holds the lowered amount")
		c := call("person_a", "req_3", 600_000, 0)
		require.ErrorIs(t, c.Refused, core.ErrPlanLimit)
		require.Equal(t, core.Micros(1_000_000), c.PersonSpent)
		require.Nil(t, c.Hold)
		require.Equal(t, core.Micros(1_000_000), balance(t, s, org.ID).Held, "the refused call holds nothing")

		require.NoError(t, call("person_b", "req_b", 600_000, 0).Refused, "another person has their own allowance")
		require.NoError(t, admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: "req_key", Lease: time.Minute,
			Hold: core.PlaceHoldParams{Amount: 2_000_000}}).Refused, "and a key's call no allowance")

		_, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: a.Hold.ID, OrgID: org.ID, Billed: 250_000})
		require.NoError(t, err)
		require.NoError(t, s.ReleaseHold(ctx, b.Hold.ID, org.ID))
		d := call("person_a", "req_4", 900_000, 0)
		require.NoError(t, d.Refused)
		require.Equal(t, core.Micros(750_000), d.Hold.Amount, "the settled bill counts, the released hold does not")
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: d.Hold.ID, OrgID: org.ID, Billed: 700_000})
		require.NoError(t, err)
		e := call("person_a", "req_5", 900_000, 60_000)
		require.ErrorIs(t, e.Refused, core.ErrPlanLimit, "$0.05 left, less than the least the call asks")
		require.Equal(t, core.Micros(950_000), e.PersonSpent)
		f := call("person_a", "req_6", 900_000, 50_000)
		require.NoError(t, f.Refused)
		require.Equal(t, core.Micros(50_000), f.Hold.Amount)
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: f.Hold.ID, OrgID: org.ID, Billed: 60_000})
		require.ErrorIs(t, err, core.ErrAboveHold, "no charge above its hold")
	})

	// However many of a person's calls ask at once, their holds never add
	// up to more than the allowance, and every call that fits is admitted.
	t.Run("ConcurrentCallsNeverPassTheAllowance", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		const n = 16
		var wg sync.WaitGroup
		results := make([]*core.AdmitResult, n)
		for i := range n {
			wg.Go(func() {
				a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: core.NewID("req"), SlotLimit: n,
					Lease: time.Minute, Hold: core.PlaceHoldParams{Amount: 300_000}, PersonID: "person_a", PersonSlots: n,
					PersonAllowance: allowance(1_000_000), MinHold: 50_000})
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = a
			})
		}
		wg.Wait()
		var held core.Micros
		admitted := 0
		for _, a := range results {
			if a.Refused != nil {
				require.ErrorIs(t, a.Refused, core.ErrPlanLimit)
				continue
			}
			admitted++
			held += a.Hold.Amount
		}
		require.Equal(t, core.Micros(1_000_000), held, "three holds of $0.30 and one of what is left, $0.10")
		require.Equal(t, 4, admitted)
		require.Equal(t, held, balance(t, s, org.ID).Held)
	})
}
