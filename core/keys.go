package core

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Key prefixes. A key is a prefix followed by 32 random bytes in unpadded
// base64url (43 characters).
const (
	LiveKeyPrefix = "ccl_live_"
	TestKeyPrefix = "ccl_test_"
	keySecretLen  = 43
)

// NewKeySecret returns a fresh key (prefix plus 32 random bytes) and its hash.
func NewKeySecret(test bool) (secret string, hash []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read never fails on supported platforms
	}
	prefix := LiveKeyPrefix
	if test {
		prefix = TestKeyPrefix
	}
	secret = prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashKey(secret)
}

// HashKey returns the SHA-256 of a key, the only form in which keys are
// stored or looked up.
func HashKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// WellFormedKey reports whether s has the shape of a Conclave key: a known
// prefix and 32 bytes of base64url. It says nothing of whether the key exists.
func WellFormedKey(s string) bool {
	var rest string
	switch {
	case strings.HasPrefix(s, LiveKeyPrefix):
		rest = s[len(LiveKeyPrefix):]
	case strings.HasPrefix(s, TestKeyPrefix):
		rest = s[len(TestKeyPrefix):]
	default:
		return false
	}
	if len(rest) != keySecretLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// KeyHint is the part of a key that may be shown after issuance: its prefix
// and first four secret characters.
func KeyHint(secret string) string {
	n := len(LiveKeyPrefix) + 4
	if len(secret) < n {
		return secret
	}
	return secret[:n] + "…"
}
