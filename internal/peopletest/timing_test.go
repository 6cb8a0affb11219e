package peopletest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/people"
)

// signInTiming measures, in one run, n sign-ins with an unknown email and n
// with a known email and a wrong password, interleaved, and returns both
// medians. Each attempt has its own account and address, so that no budget
// refuses it.
func signInTiming(t testing.TB, b *bundle, n int) (unknown, wrong time.Duration, answers [2]string) {
	var u, w []time.Duration
	for i := range n {
		start := time.Now()
		_, err := b.svc.SignInPassword(ctx, fmt.Sprintf("nobody%d@acme.example", i), "a wrong but long password", fmt.Sprintf("198.51.100.%d", i%250))
		u = append(u, time.Since(start))
		require.Error(t, err)
		answers[0] = err.Error()

		start = time.Now()
		_, err = b.svc.SignInPassword(ctx, "mia@acme.example", "a wrong but long password", fmt.Sprintf("192.0.2.%d", i%250))
		w = append(w, time.Since(start))
		require.Error(t, err)
		answers[1] = err.Error()
	}
	return median(u), median(w), answers
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSignInTiming: an unknown email must cost what a wrong password
// costs, so that timing never says whether an email has an account. It
// prints both medians and their ratio, measured in one run with the
// default argon2id parameters (goal: ratio 0.9–1.1).
func BenchmarkSignInTiming(b *testing.B) {
	bb := setup(b, people.Config{Argon2: people.DefaultArgon2, AccountAttempts: 1 << 20, AddressAttempts: 1 << 20})
	var unknown, wrong time.Duration
	for range b.N {
		unknown, wrong, _ = signInTiming(b, bb, 40)
	}
	ratio := float64(unknown) / float64(wrong)
	b.ReportMetric(float64(unknown.Microseconds())/1000, "unknown_email_median_ms")
	b.ReportMetric(float64(wrong.Microseconds())/1000, "wrong_password_median_ms")
	b.ReportMetric(ratio, "ratio")
	b.Logf("median sign-in: unknown email %v, known email with a wrong password %v: ratio %.3f (goal 0.9–1.1)", unknown, wrong, ratio)
}

// The timing measurement in its smoke form: a few samples with cheap
// parameters; both answers are the same refusal and both paths hashed.
func TestSignInTimingSmoke(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{AccountAttempts: 1 << 20, AddressAttempts: 1 << 20})
	before, _ := b.svc.HashStats()
	unknown, wrong, answers := signInTiming(t, b, 3)
	after, _ := b.svc.HashStats()
	require.Equal(t, answers[0], answers[1], "the same answer for an unknown email and a wrong password")
	require.Equal(t, before+6, after, "both paths computed a hash")
	t.Logf("medians: unknown %v, wrong %v", unknown, wrong)
}
