package tokens

import (
	"context"

	"github.com/conclavehq/conclave/core"
)

const (
	MaxPiece   = maxPiece
	CheckEvery = checkEvery
)

// Work is what a count did: the pieces it looked at, and the pieces and
// bytes it merged.
type Work struct{ Pieces, Merges, Merged int }

// OverWork is Over, and the work it did: none when the bytes settled it.
func OverWork(ctx context.Context, messages []core.Message, limit int) (n int, over bool, w Work, err error) {
	n, over, c, err := count(ctx, messages, limit)
	if c != nil {
		w = Work{Pieces: c.pieces, Merges: c.merges, Merged: c.merged}
	}
	return n, over, w, err
}
