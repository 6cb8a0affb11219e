package byok

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Environment variables of the sealing keys.
const (
	// EnvKey holds the current sealing key: base64 (standard or URL
	// alphabet, padded or not) of 32 random bytes. New secrets are sealed
	// with it.
	EnvKey = "CONCLAVE_BYOK_KEY"
	// EnvPreviousKeys optionally holds earlier sealing keys, comma-separated
	// in the same encoding, so that secrets sealed before a rotation still
	// open until they are sealed again.
	EnvPreviousKeys = "CONCLAVE_BYOK_PREVIOUS_KEYS"
)

// ErrNoKey means the sealing key is not configured.
var ErrNoKey = errors.New(EnvKey + " is not set: bring-your-own-key needs a sealing key (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)")

// ErrOpen means a sealed secret could not be opened: it was sealed with a
// key this process does not hold, for another organisation or provider, or
// it was altered.
var ErrOpen = errors.New("byok: the sealed secret could not be opened")

// nonceSize is AES-GCM's standard nonce size; a sealed secret is the nonce
// followed by the ciphertext and its 16-byte tag, so a sealed empty secret
// is core.MinSealedLen bytes long (the test checks it).
const nonceSize = 12

// Sealer encrypts provider secrets at rest with AES-256-GCM. The additional
// data binds each ciphertext to its organisation and provider, so a sealed
// secret copied to another row does not open. It is safe for concurrent
// use.
type Sealer struct {
	current string                 // key id of the key that seals
	keys    map[string]cipher.AEAD // by key id: the current key and any previous ones
}

// NewSealer returns a Sealer that seals with current and opens with current
// or any of previous. Every key must be 32 bytes.
func NewSealer(current []byte, previous ...[]byte) (*Sealer, error) {
	s := &Sealer{keys: map[string]cipher.AEAD{}}
	for i, k := range append([][]byte{current}, previous...) {
		if len(k) != 32 {
			return nil, fmt.Errorf("byok: a sealing key must be 32 bytes, not %d", len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("byok: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("byok: %w", err)
		}
		id := KeyID(k)
		if i == 0 {
			s.current = id
		}
		if _, dup := s.keys[id]; !dup {
			s.keys[id] = aead
		}
	}
	return s, nil
}

// KeyID names a sealing key without revealing it: the first 8 bytes, in
// hex, of a domain-separated SHA-256 of the key. It is stored beside each
// sealed secret so that the right key opens it after a rotation.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("conclave byok key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ParseKey decodes a sealing key: base64 of exactly 32 bytes. The error
// never repeats the value.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("byok: the sealing key decodes to %d bytes; it must be 32", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("byok: the sealing key is not base64")
}

// FromEnv builds the Sealer from EnvKey and EnvPreviousKeys. lookup
// defaults to os.LookupEnv. Without EnvKey it returns ErrNoKey; a key that
// does not decode is an error naming the variable, never its value.
func FromEnv(lookup func(string) (string, bool)) (*Sealer, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, _ := lookup(EnvKey)
	if strings.TrimSpace(v) == "" {
		return nil, ErrNoKey
	}
	current, err := ParseKey(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvKey, err)
	}
	var previous [][]byte
	prev, _ := lookup(EnvPreviousKeys)
	for i, p := range strings.Split(prev, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		k, err := ParseKey(p)
		if err != nil {
			return nil, fmt.Errorf("%s, key %d: %w", EnvPreviousKeys, i+1, err)
		}
		previous = append(previous, k)
	}
	return NewSealer(current, previous...)
}

// KeyID is the id of the key that seals.
func (s *Sealer) KeyID() string { return s.current }

// additionalData binds a ciphertext to its row.
func additionalData(orgID, provider string) []byte {
	return []byte("conclave byok v1\x00" + orgID + "\x00" + provider)
}

// Seal encrypts secret for (orgID, provider) with the current key. It
// returns nonce||ciphertext and the key's id.
func (s *Sealer) Seal(orgID, provider string, secret []byte) (sealed []byte, keyID string, err error) {
	aead := s.keys[s.current]
	nonce := make([]byte, nonceSize, nonceSize+len(secret)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("byok: reading a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, secret, additionalData(orgID, provider)), s.current, nil
}

// Open decrypts what Seal returned for the same (orgID, provider), with the
// key keyID names. Any failure is ErrOpen, or an error saying the key is
// not held; neither carries secret material.
func (s *Sealer) Open(orgID, provider, keyID string, sealed []byte) ([]byte, error) {
	aead, ok := s.keys[keyID]
	if !ok {
		return nil, fmt.Errorf("byok: the secret is sealed with key %s, which is neither %s nor in %s: %w", keyID, EnvKey, EnvPreviousKeys, ErrOpen)
	}
	if len(sealed) < core.MinSealedLen {
		return nil, ErrOpen
	}
	out, err := aead.Open(nil, sealed[:nonceSize], sealed[nonceSize:], additionalData(orgID, provider))
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}
