package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

const (
	// NonceLen is the length of every nonce Issue returns: base64url without
	// padding of 16 bytes, so the NONCE attribute takes 28 bytes and the
	// first-leg 401 stays small enough for the amplification bound.
	NonceLen = 22
	// NonceSecretLen is the length of the secret NewNonces takes and Secret
	// returns.
	NonceSecretLen = 32
	// DefaultNonceLifetime is how long a nonce checks when NewNonces is given
	// 0: an hour, as pion/turn's server and RFC 5766 §4 have it.
	DefaultNonceLifetime = time.Hour
	// NonceSkew is how far ahead of now an issue time may lie and still
	// check: a wall clock stepped back a little must not make every client
	// sign twice.
	NonceSkew = 5 * time.Second
)

const (
	nonceTimeLen = 4  // issue time in Unix seconds, big-endian
	nonceMACLen  = 12 // truncated HMAC-SHA256(secret, time)
	nonceRawLen  = nonceTimeLen + nonceMACLen
	hmacBlock    = 64 // SHA-256's block size
)

// nonceEncoding is never modified. Strict refuses non-zero trailing bits, so
// exactly one string of NonceLen characters decodes to a given nonce.
var nonceEncoding = base64.RawURLEncoding.Strict()

// Nonces issues and checks stateless nonces: each one carries its issue time
// and a MAC of it under a secret, so checking needs no table and a successor
// process given the secret accepts what its predecessor issued. Safe for
// concurrent use; it never changes after NewNonces.
type Nonces struct {
	secret [NonceSecretLen]byte
	// The secret XORed with HMAC's pads (RFC 2104), so a MAC is two
	// sha256.Sum256 calls on stack buffers and Check allocates nothing.
	ipad, opad [hmacBlock]byte
	life       int64 // seconds
	skew       int64 // seconds
}

// NewNonces returns Nonces under secret, or under a fresh random secret when
// secret is nil (a process starting on its own; a successor passes its
// predecessor's Secret). Nonces check for life; 0 means DefaultNonceLifetime.
func NewNonces(secret []byte, life time.Duration) (*Nonces, error) {
	if life == 0 {
		life = DefaultNonceLifetime
	}
	if life < time.Second {
		return nil, fmt.Errorf("nonce lifetime %v: %w", life, ErrNonceLifetime)
	}
	n := &Nonces{life: int64(life / time.Second), skew: int64(NonceSkew / time.Second)}
	switch {
	case secret == nil:
		// crypto/rand.Read never returns an error: it crashes the program instead.
		_, _ = rand.Read(n.secret[:])
	case len(secret) != NonceSecretLen:
		return nil, fmt.Errorf("nonce secret of %d bytes, want %d: %w", len(secret), NonceSecretLen, ErrNonceSecret)
	default:
		copy(n.secret[:], secret)
	}
	for i := range hmacBlock {
		n.ipad[i], n.opad[i] = 0x36, 0x5c
	}
	for i, b := range n.secret {
		n.ipad[i] ^= b
		n.opad[i] ^= b
	}
	return n, nil
}

// Secret returns a copy of the secret, for the state handed to a successor
// only: whoever holds it can issue nonces this process accepts.
func (n *Nonces) Secret() []byte {
	s := make([]byte, NonceSecretLen)
	copy(s, n.secret[:])
	return s
}

// Lifetime returns how long a nonce checks after it was issued.
func (n *Nonces) Lifetime() time.Duration { return time.Duration(n.life) * time.Second }

// Issue returns a nonce issued at now, truncated to the second. It allocates
// the returned string only.
func (n *Nonces) Issue(now time.Time) string {
	raw := n.raw(uint32(now.Unix())) //nolint:gosec // Unix seconds fit 32 bits until 2106.
	var text [NonceLen]byte
	nonceEncoding.Encode(text[:], raw[:])
	return string(text[:])
}

// Check reports whether nonce is one Issue returned under this secret less
// than Lifetime before now and at most NonceSkew after it. Every error means
// the client must sign again with a fresh nonce (438). Called for every
// signed request: it allocates nothing.
func (n *Nonces) Check(nonce string, now time.Time) error {
	var raw [nonceRawLen]byte
	if !decodeNonce(&raw, nonce) {
		return ErrNonceMalformed
	}
	issued := binary.BigEndian.Uint32(raw[:nonceTimeLen])
	want := n.raw(issued)
	if subtle.ConstantTimeCompare(raw[nonceTimeLen:], want[nonceTimeLen:]) != 1 {
		return ErrNonceForged
	}
	age := now.Unix() - int64(issued)
	if age >= n.life || age < -n.skew {
		return ErrNonceStale
	}
	return nil
}

// raw is the binary nonce for an issue time: the time, then the first bytes
// of HMAC-SHA256(secret, time).
func (n *Nonces) raw(issued uint32) [nonceRawLen]byte {
	var inner [hmacBlock + nonceTimeLen]byte
	copy(inner[:], n.ipad[:])
	binary.BigEndian.PutUint32(inner[hmacBlock:], issued)
	var outer [hmacBlock + sha256.Size]byte
	copy(outer[:], n.opad[:])
	sum := sha256.Sum256(inner[:])
	copy(outer[hmacBlock:], sum[:])
	mac := sha256.Sum256(outer[:])

	var raw [nonceRawLen]byte
	binary.BigEndian.PutUint32(raw[:], issued)
	copy(raw[nonceTimeLen:], mac[:nonceMACLen])
	return raw
}

// decodeNonce decodes a nonce of the one form Issue writes. The decoder skips
// CR and LF, so a string holding them decodes to fewer bytes and is refused.
func decodeNonce(raw *[nonceRawLen]byte, nonce string) bool {
	if len(nonce) != NonceLen {
		return false
	}
	var text [NonceLen]byte
	copy(text[:], nonce)
	n, err := nonceEncoding.Decode(raw[:], text[:])
	return err == nil && n == nonceRawLen
}
