package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
)

// SpendResult is what one run of AggregateSpend did.
type SpendResult struct {
	// Postings is how many postings the cursor moved past; Cursor is the
	// id it stands at now.
	Postings int
	Cursor   int64
	// Waiting is true when the run stopped at a gap in the posting ids
	// younger than the grace: a transaction that may still commit.
	Waiting bool
}

// spendKey is one row of daily_spend.
type spendKey struct {
	org, key, mode, person, kind string
	day                          time.Time
}

// spendKinds maps the postings that count as spend to their kind in
// daily_spend; others (top-ups, trial credit) move the cursor only.
var spendKinds = map[string]string{
	core.PostingCallCharge:    core.SpendCall,
	core.PostingTestCharge:    core.SpendTest,
	core.PostingTestRefund:    core.SpendTest,
	core.PostingCertifyCharge: core.SpendCertify,
	core.PostingCertifyRefund: core.SpendCertify,
}

// AggregateSpend adds the journal's postings past its cursor to the daily
// spend sums, at most limit of them, and moves the cursor past them — in
// one transaction, so that each posting is counted exactly once whatever
// fails or crashes, and replicas running it at once take turns on the
// cursor's row.
//
// Posting ids are handed out before their transaction commits, so a
// transaction still running leaves a gap that a later posting's commit
// does not: the run stops before a gap unless the posting after it began
// more than grace ago, by when the gap's transaction (a settlement, a
// top-up: each a few statements) has ended, so the gap is an id that was
// rolled back.
func (s *Store) AggregateSpend(ctx context.Context, grace time.Duration, limit int) (*SpendResult, error) {
	res := &SpendResult{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, dq("SpendCursor")).Scan(&res.Cursor); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, dq("SpendPostings"), res.Cursor, limit, grace.Microseconds())
		if err != nil {
			return err
		}
		sums := map[spendKey]*[2]int64{}
		var order []spendKey
		for rows.Next() {
			var (
				id                           int64
				kind, org, key, mode, person string
				day                          time.Time
				amount                       int64
				old                          bool
			)
			if err := rows.Scan(&id, &kind, &org, &day, &amount, &key, &mode, &person, &old); err != nil {
				rows.Close()
				return err
			}
			if id != res.Cursor+1 && !old {
				res.Waiting = true
				break
			}
			res.Cursor = id
			res.Postings++
			sk, ok := spendKinds[kind]
			if !ok || org == "" || amount == 0 {
				continue
			}
			k := spendKey{org: org, day: day, key: key, mode: mode, person: person, kind: sk}
			sum := sums[k]
			if sum == nil {
				sum = &[2]int64{}
				sums[k] = sum
				order = append(order, k)
			}
			if amount < 0 { // a charge
				sum[0]++
			}
			sum[1] -= amount
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if res.Postings == 0 {
			return nil
		}
		if len(order) > 0 {
			var orgs, keys, modes, people, kinds []string
			var days []time.Time
			var charges, billed []int64
			for _, k := range order {
				v := sums[k]
				orgs, keys, modes, people, kinds = append(orgs, k.org), append(keys, k.key), append(modes, k.mode),
					append(people, k.person), append(kinds, k.kind)
				days, charges, billed = append(days, k.day), append(charges, v[0]), append(billed, v[1])
			}
			if _, err := tx.Exec(ctx, dq("AddSpend"), orgs, days, keys, modes, people, kinds, charges, billed); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, dq("MoveSpendCursor"), res.Cursor)
		return err
	})
	if err != nil {
		return nil, translate(err)
	}
	return res, nil
}
