package runs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A public id is 128 random bits in lowercase hex, never the same twice;
// anything else is not one, so a lookup of it never reaches the store.
func TestPublicIDs(t *testing.T) {
	a, b := newPublicID(), newPublicID()
	require.NotEqual(t, a, b)
	require.True(t, validPublicID(a), a)
	for _, bad := range []string{"", a[:31], a + "0", "G" + a[1:], "ABCDEF" + a[6:], "../" + a[3:]} {
		require.False(t, validPublicID(bad), bad)
	}
}

// Only a complete certification with the verdict certified has a
// certificate.
func TestCertified(t *testing.T) {
	done := &Batch{Kind: KindCertify, Status: StatusComplete, Certification: &Certification{Verdict: CertCertified}}
	require.True(t, done.Certified())
	for _, b := range []*Batch{
		{Kind: KindCertify, Status: StatusComplete, Certification: &Certification{Verdict: CertProvisional}},
		{Kind: KindCertify, Status: StatusRunning},
		{Kind: KindCertify, Status: StatusComplete},
		{Kind: KindTest, Status: StatusComplete, Certification: &Certification{Verdict: CertCertified}},
	} {
		require.False(t, b.Certified(), "%+v", b)
	}
}
