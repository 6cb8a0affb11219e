package people

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var cheap = Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1}

func TestHashIsAPHCStringThatKeepsItsParameters(t *testing.T) {
	t.Parallel()
	h := hashPassword([]byte("a long enough passphrase"), cheap)
	require.Regexp(t, regexp.MustCompile(`^\$argon2id\$v=19\$m=64,t=1,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`), h)
	require.NotEqual(t, h, hashPassword([]byte("a long enough passphrase"), cheap), "a fresh salt each time")

	// A hash made with other parameters still verifies: they are its own.
	stronger := Argon2Params{Time: 2, MemoryKiB: 128, Threads: 2}
	h2 := hashPassword([]byte("a long enough passphrase"), stronger)
	for _, s := range []string{h, h2} {
		p, err := parsePHC(s)
		require.NoError(t, err)
		require.True(t, p.verify([]byte("a long enough passphrase")))
		require.False(t, p.verify([]byte("a long enough passphrasE")))
		require.False(t, p.verify(nil))
	}
	p, err := parsePHC(h2)
	require.NoError(t, err)
	require.Equal(t, stronger, p.params)
}

func TestParsePHCRefusesWhatIsNotOurs(t *testing.T) {
	t.Parallel()
	good := hashPassword([]byte("x"), cheap)
	parts := strings.Split(good, "$")
	with := func(i int, v string) string {
		q := append([]string(nil), parts...)
		q[i] = v
		return strings.Join(q, "$")
	}
	for _, bad := range []string{
		"",
		"plaintext",
		"$2b$10$abcdefghijklmnopqrstuv",     // bcrypt
		with(1, "argon2i"),                  // another variant
		with(2, "v=16"),                     // another version
		with(3, "m=64,t=1"),                 // a parameter missing
		with(3, "m=4194304,t=1,p=1"),        // 4 GiB: a stored hash cannot cost that
		with(3, "m=64,t=1000,p=1"),          // a thousand passes
		with(3, "m=64,t=0,p=1"),             // no pass
		with(4, ""),                         // no salt
		with(4, "not base64!"),              // salt
		with(5, "c2hvcnQ"),                  // a 5-byte key
		good + "$extra",                     // a field too many
		strings.TrimPrefix(good, "$"),       // no leading $
		strings.Replace(good, "$", "$$", 1), // an empty field
		with(5, strings.Repeat("QUFB", 30)), // a 90-byte key
		with(3, "m=64,t=1,p=1,data=c29tZQ"), // parameters we do not write
	} {
		_, err := parsePHC(bad)
		require.ErrorIs(t, err, errBadHash, bad)
	}
}

func TestCheckPassword(t *testing.T) {
	t.Parallel()
	const email = "ada@acme.example"
	for _, tc := range []struct {
		password string
		ok       bool
	}{
		{"eleven char", false},
		{"twelve chars", true},
		{strings.Repeat("é", 12), true},                         // 12 characters, 24 bytes
		{strings.Repeat("é", 11), false},                        // 22 bytes, but 11 characters
		{strings.Repeat("🔑", 11), false},                        // 44 bytes, 11 characters
		{strings.Repeat("ab", MaxPasswordBytes/2), true},        // 1,024 bytes: the most
		{strings.Repeat("ab", MaxPasswordBytes/2) + "c", false}, // 1,025 bytes: never hashed
		{strings.Repeat("ab", MaxPasswordBytes/4), true},        // 512 bytes
		{"password1234", false},
		{"PassWord1234", false},
		{"QWERTY123456", false},
		{"correcthorsebatterystaple", false},
		{"ada@acme.example", false},
		{"ADA@ACME.EXAMPLE", false},
		{"ada@acme.example!", true},
		{"nul\x00in the middle", false},
		{"\xff\xfe not utf-8 text", false},
	} {
		err := CheckPassword(tc.password, email)
		if tc.ok {
			require.NoError(t, err, tc.password)
			continue
		}
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "%q: want a FieldError, got %v", tc.password, err)
		require.Equal(t, "password", fe.Field)
		require.NotEmpty(t, fe.Message)
	}
}

func TestCommonPasswordList(t *testing.T) {
	t.Parallel()
	long := 0
	for w := range commonPasswords {
		require.Equal(t, strings.ToLower(w), w)
		require.False(t, strings.HasPrefix(w, "#"), "comments are not entries")
		if len([]rune(w)) >= MinPasswordLen {
			long++
		}
	}
	require.Greater(t, long, 200, "a few hundred entries a 12-character minimum lets through")
}

// The hashing bound holds and is honest: a caller waiting for a turn gives
// up with its context.
func TestHashingWaitsForATurnWithinItsContext(t *testing.T) {
	t.Parallel()
	s := &Service{cfg: Config{Argon2: cheap}, hashes: make(chan struct{}, 1)}
	s.dummy = hashPassword(randomBytes(24), cheap)
	s.hashes <- struct{}{} // every turn taken
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.checkPassword(c, "", "whatever it is")
	require.ErrorIs(t, err, context.Canceled)
	total, _ := s.HashStats()
	require.Zero(t, total, "no hash without a turn")

	<-s.hashes
	ok, err := s.checkPassword(context.Background(), "", "whatever it is")
	require.NoError(t, err)
	require.False(t, ok, "the dummy hash never signs anyone in")
	h, err := s.newHash(context.Background(), "whatever it is")
	require.NoError(t, err)
	ok, err = s.checkPassword(context.Background(), h, "whatever it is")
	require.NoError(t, err)
	require.True(t, ok)
	total, peak := s.HashStats()
	require.Equal(t, int64(3), total)
	require.Equal(t, int64(1), peak)
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		s, h := newSecret()
		require.Len(t, s, 43)
		require.Len(t, h, 32)
		require.Equal(t, h, hashSecret(s))
		require.False(t, seen[s])
		seen[s] = true
	}
	for _, forged := range []string{"", "short", strings.Repeat("A", 44), strings.Repeat("*", 43)} {
		require.Nil(t, hashSecret(forged), forged)
	}
	require.Equal(t, "45 seconds", spellWait(44500*1e6))
}
