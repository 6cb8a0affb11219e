package tokens

import (
	"math/rand/v2"
	"testing"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/stretchr/testify/require"
)

func TestVocabularyHoldsEveryToken(t *testing.T) {
	t.Parallel()
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(Encoding + ".tiktoken")
	require.NoError(t, err)
	v := vocabulary()
	longest := 0
	for tok, r := range ranks {
		longest = max(longest, len(tok))
		got, ok := v.union(v.hash(tok), tok)
		require.Truef(t, ok, "token %q", tok)
		require.Equalf(t, int32(r), got, "rank of %q", tok)
		require.Truef(t, v.has(tok), "token %q", tok)
	}
	require.Equal(t, MaxTokenBytes, longest)

	// Strings that are no token are none.
	rng := rand.New(rand.NewPCG(7, 8))
	for range 10000 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		_, want := ranks[string(b)]
		_, ok := v.union(v.hash(string(b)), string(b))
		require.Equal(t, want, ok, "%q", b)
		require.Equal(t, want, v.has(string(b)), "%q", b)
	}
}

func TestHashOfUnionFromParts(t *testing.T) {
	t.Parallel()
	v := vocabulary()
	rng := rand.New(rand.NewPCG(9, 10))
	for range 1000 {
		b := make([]byte, rng.IntN(maxPiece+1))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := string(b)
		k := rng.IntN(len(s) + 1)
		require.Equal(t, v.hash(s), v.hash(s[:k])*v.pow[len(s)-k]+v.hash(s[k:]), "%q at %d", s, k)
	}
}
