package runs

import (
	"errors"
	"fmt"

	"github.com/conclavehq/conclave/core"
)

// SharePrices sets each question's Price: its share of b's charge, which
// it is refunded when it is given up on or cancelled. A test question's
// share is its bucket's price at its tier (b.Quote's BucketQuote.Price); a
// certification's flat price is split evenly over its questions, the
// first Billed mod n of them one micro-dollar more (the $50 over 150
// questions: 333,334 µ$ for the first 50, 333,333 for the rest). The
// shares add up to b.Billed exactly, or SharePrices says why not.
func SharePrices(b *Batch, qs []*Question) error {
	n := core.Micros(len(qs))
	if n == 0 {
		return errors.New("runs: a batch without questions has no prices to share")
	}
	var sum core.Micros
	for i, q := range qs {
		if b.Kind == KindCertify {
			q.Price = b.Billed / n
			if core.Micros(i) < b.Billed%n {
				q.Price++
			}
		} else {
			q.Price = b.Quote.Buckets[q.Bucket].Price(q.Tier)
		}
		sum += q.Price
	}
	if sum != b.Billed {
		return fmt.Errorf("runs: the questions' prices add up to %d µ$, not the %d µ$ charged", sum, b.Billed)
	}
	return nil
}

// ErrBatchFinished refuses to cancel a batch with nothing left to cancel:
// complete, failed, or running with every question done (being scored) or
// answered (being judged, then scored).
var ErrBatchFinished = errors.New("the batch is finished")
