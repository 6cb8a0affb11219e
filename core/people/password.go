package people

import (
	"bufio"
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
)

// Password rules: at least MinPasswordLen characters, at most
// MaxPasswordBytes bytes (a longer one is refused before it is hashed), not
// one of the most common passwords, not the email.
const (
	MinPasswordLen   = 12
	MaxPasswordBytes = 1024
)

//go:embed commonpasswords.txt
var commonPasswordsTxt string

// commonPasswords are the embedded list, lower-cased.
var commonPasswords = func() map[string]bool {
	m := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(commonPasswordsTxt))
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" && !strings.HasPrefix(w, "#") {
			m[strings.ToLower(w)] = true
		}
	}
	return m
}()

// CheckPassword refuses a password a person may not choose, as a
// *FieldError on field "password".
func CheckPassword(password, email string) error {
	refuse := func(msg string) error { return &FieldError{Field: "password", Message: msg} }
	switch {
	case len(password) > MaxPasswordBytes:
		return refuse(fmt.Sprintf("Use at most %d bytes.", MaxPasswordBytes))
	case !carrier.Text(password):
		return refuse("Use printable characters only.")
	case utf8.RuneCountInString(password) < MinPasswordLen:
		return refuse(fmt.Sprintf("Use at least %d characters.", MinPasswordLen))
	case commonPasswords[strings.ToLower(password)]:
		return refuse("This password is one of the most common ones; choose another.")
	case email != "" && strings.EqualFold(strings.TrimSpace(password), core.NormalEmail(email)):
		return refuse("Do not use your email as your password.")
	}
	return nil
}

// hashPassword hashes password with argon2id and a fresh 16-byte salt, as a
// PHC string that keeps its parameters: $argon2id$v=19$m=…,t=…,p=…$salt$hash.
func hashPassword(password []byte, p Argon2Params) string {
	salt := randomBytes(16)
	key := argon2.IDKey(password, salt, p.Time, p.MemoryKiB, p.Threads, 32)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
}

// phc is a parsed PHC argon2id hash.
type phc struct {
	params    Argon2Params
	salt, key []byte
}

var errBadHash = errors.New("people: not an argon2id PHC hash")

func parsePHC(s string) (*phc, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return nil, errBadHash
	}
	var h phc
	_, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &h.params.MemoryKiB, &h.params.Time, &h.params.Threads)
	if err != nil || parts[3] != fmt.Sprintf("m=%d,t=%d,p=%d", h.params.MemoryKiB, h.params.Time, h.params.Threads) {
		return nil, errBadHash // nothing before, after or between the three
	}
	// Bounds, so that a stored hash cannot make one check cost minutes.
	if h.params.Time < 1 || h.params.Time > 100 || h.params.MemoryKiB < 8 || h.params.MemoryKiB > 1<<21 || h.params.Threads < 1 {
		return nil, errBadHash
	}
	enc := base64.RawStdEncoding
	if h.salt, err = enc.DecodeString(parts[4]); err != nil || len(h.salt) < 8 || len(h.salt) > 64 {
		return nil, errBadHash
	}
	if h.key, err = enc.DecodeString(parts[5]); err != nil || len(h.key) < 16 || len(h.key) > 64 {
		return nil, errBadHash
	}
	return &h, nil
}

// verify reports whether password matches the PHC hash, in constant time.
func (h *phc) verify(password []byte) bool {
	key := argon2.IDKey(password, h.salt, h.params.Time, h.params.MemoryKiB, h.params.Threads, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(key, h.key) == 1
}

// hashing runs f as one of at most MaxConcurrentHashes hashes at once,
// waiting for a turn (bounded by ctx).
func (s *Service) hashing(ctx context.Context, f func()) error {
	select {
	case s.hashes <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.hashes }()
	n := s.hashingNow.Add(1)
	for {
		peak := s.hashPeak.Load()
		if n <= peak || s.hashPeak.CompareAndSwap(peak, n) {
			break
		}
	}
	defer s.hashingNow.Add(-1)
	s.hashed.Add(1)
	f()
	return nil
}

// checkPassword reports whether password matches stored (a PHC hash; ""
// checks against the dummy hash and reports false), in its hashing turn.
func (s *Service) checkPassword(ctx context.Context, stored, password string) (bool, error) {
	known := stored != ""
	if !known {
		stored = s.dummy
	}
	h, err := parsePHC(stored)
	if err != nil {
		return false, err
	}
	ok := false
	if err := s.hashing(ctx, func() { ok = h.verify([]byte(password)) }); err != nil {
		return false, err
	}
	return ok && known, nil
}

// newHash hashes a new password in its hashing turn.
func (s *Service) newHash(ctx context.Context, password string) (string, error) {
	var out string
	err := s.hashing(ctx, func() { out = hashPassword([]byte(password), s.cfg.Argon2) })
	return out, err
}
