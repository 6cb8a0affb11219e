package bank_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench/bank"
)

func ids(items []bank.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func TestDrawIsReproducible(t *testing.T) {
	t.Parallel()
	a, err := bank.Draw(bank.Version, 42, bank.Certify)
	require.NoError(t, err)
	b, err := bank.Draw(bank.Version, 42, bank.Certify)
	require.NoError(t, err)
	require.Equal(t, ids(a), ids(b))
	// The items come back whole: a stored id finds the same question.
	for _, it := range a[:10] {
		got, err := bank.Lookup(it.ID)
		require.NoError(t, err)
		require.Equal(t, it.Question, got.Question)
	}
}

func TestDrawIsStratifiedAndCapsEachTemplate(t *testing.T) {
	t.Parallel()
	for _, counts := range []bank.Counts{
		bank.Certify,
		{Light: 10, Medium: 10, Hard: 10},
		{Light: 100, Medium: 100, Hard: 100},
		{Light: 0, Medium: 7, Hard: 1},
	} {
		for seed := range uint64(20) {
			items, err := bank.Draw(bank.Version, seed, counts)
			require.NoError(t, err)
			perBucket := map[bank.Bucket]int{}
			perTemplate := map[string]int{}
			verifiable := map[bank.Bucket]int{}
			seen := map[string]bool{}
			last := -1
			for _, it := range items {
				require.False(t, seen[it.ID], "item %s drawn twice", it.ID)
				seen[it.ID] = true
				perBucket[it.Bucket]++
				perTemplate[it.Template()]++
				if it.Kind == bank.Verifiable {
					verifiable[it.Bucket]++
				}
				// Bucket by bucket, lightest first.
				rank := map[bank.Bucket]int{bank.Light: 0, bank.Medium: 1, bank.Hard: 2}[it.Bucket]
				require.GreaterOrEqual(t, rank, last)
				last = rank
			}
			for _, b := range bank.Buckets {
				require.Equal(t, counts.Of(b), perBucket[b], "bucket %s, seed %d", b, seed)
				if n := counts.Of(b); n <= 50 {
					// Half verifiable (rounded up) while both kinds last.
					require.Equal(t, (n+1)/2, verifiable[b], "bucket %s, seed %d", b, seed)
				}
			}
			for tpl, n := range perTemplate {
				require.LessOrEqual(t, n, bank.MaxPerTemplate, "template %s", tpl)
			}
		}
	}
}

func TestDrawSpreadsOverTemplatesBeforeRepeatingOne(t *testing.T) {
	t.Parallel()
	items, err := bank.Draw(bank.Version, 7, bank.Certify)
	require.NoError(t, err)
	perTemplate := map[string]int{}
	for _, it := range items {
		perTemplate[it.Template()]++
	}
	// 25 verifiable items per bucket come from at least 25 families, so no
	// template gives two.
	for tpl, n := range perTemplate {
		require.Equal(t, 1, n, tpl)
	}
}

func TestDrawsDifferAcrossSeeds(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for seed := range uint64(10) {
		items, err := bank.Draw(bank.Version, seed, bank.Certify)
		require.NoError(t, err)
		key := fmt.Sprint(ids(items))
		require.False(t, seen[key], "seed %d repeats an earlier draw", seed)
		seen[key] = true
	}
	a, err := bank.Draw(bank.Version, 1, bank.Certify)
	require.NoError(t, err)
	b, err := bank.Draw(bank.Version, 2, bank.Certify)
	require.NoError(t, err)
	shared := map[string]bool{}
	for _, id := range ids(a) {
		shared[id] = true
	}
	same := 0
	for _, id := range ids(b) {
		if shared[id] {
			same++
		}
	}
	require.Less(t, same, len(a)/2, "two seeds share %d of %d items", same, len(a))
}

func TestDrawRefusesWhatThePoolCannotGive(t *testing.T) {
	t.Parallel()
	_, err := bank.Draw(bank.Version, 1, bank.Counts{Light: 1000})
	require.ErrorIs(t, err, bank.ErrPoolTooSmall)
	_, err = bank.Draw(bank.Version, 1, bank.Counts{Light: -1, Medium: 5})
	require.ErrorIs(t, err, bank.ErrBadCount)
	_, err = bank.Draw(bank.Version, 1, bank.Counts{})
	require.ErrorIs(t, err, bank.ErrBadCount)
	_, err = bank.Draw("v0", 1, bank.Certify)
	require.ErrorIs(t, err, bank.ErrUnknownVersion)
}

func ExampleDraw() {
	// A certification batch stores the bank version, the seed and the
	// counts; drawing again with them gives the same questions.
	items, err := bank.Draw(bank.Version, 20250101, bank.Certify)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(items), items[0].Bucket, items[len(items)-1].Bucket)
	// Output: 150 light hard
}
