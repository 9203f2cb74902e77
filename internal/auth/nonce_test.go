package auth_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/auth"
)

func newNonces(t testing.TB, secret []byte, life time.Duration) *auth.Nonces {
	t.Helper()
	n, err := auth.NewNonces(secret, life)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNonceRoundTrip(t *testing.T) {
	n := newNonces(t, nil, 0)
	for _, at := range []time.Time{now, now.Add(123456789 * time.Nanosecond), time.Unix(0, 0), time.Unix(1<<32-1, 0)} {
		nonce := n.Issue(at)
		if err := n.Check(nonce, at); err != nil {
			t.Errorf("nonce %q issued at %v: %v at once", nonce, at, err)
		}
	}
	if a, b := n.Issue(now), n.Issue(now.Add(999*time.Millisecond)); a != b {
		t.Errorf("one second, two nonces: %q, %q", a, b)
	}
	if a, b := n.Issue(now), n.Issue(now.Add(time.Second)); a == b {
		t.Errorf("two seconds, one nonce %q", a)
	}
}

func TestNonceExpires(t *testing.T) {
	for _, life := range []time.Duration{0, 2 * time.Minute} {
		n := newNonces(t, nil, life)
		if life == 0 {
			life = auth.DefaultNonceLifetime
		}
		if got := n.Lifetime(); got != life {
			t.Fatalf("Lifetime() = %v, want %v", got, life)
		}
		issuedAt := now.Add(900 * time.Millisecond) // truncated to now
		nonce := n.Issue(issuedAt)
		clock := now
		for _, step := range []struct {
			to   time.Duration // from now
			want error
		}{
			{0, nil},
			{life / 2, nil},
			{life - time.Nanosecond, nil},
			{life, auth.ErrNonceStale},
			{life + time.Hour, auth.ErrNonceStale},
			{-auth.NonceSkew, nil},
			{-auth.NonceSkew - time.Second, auth.ErrNonceStale},
			{-24 * time.Hour, auth.ErrNonceStale},
		} {
			clock = now.Add(step.to)
			if err := n.Check(nonce, clock); !errors.Is(err, step.want) {
				t.Errorf("life %v: nonce of %v checked at %v: %v, want %v", life, issuedAt, clock, err, step.want)
			}
		}
	}
}

func TestNonceOfAnotherSecret(t *testing.T) {
	a, b := newNonces(t, nil, 0), newNonces(t, nil, 0)
	if err := b.Check(a.Issue(now), now); !errors.Is(err, auth.ErrNonceForged) {
		t.Errorf("another process's nonce: %v, want %v", err, auth.ErrNonceForged)
	}
	secret := a.Secret()
	secret[len(secret)-1] ^= 1
	if err := newNonces(t, secret, 0).Check(a.Issue(now), now); !errors.Is(err, auth.ErrNonceForged) {
		t.Errorf("nonce under a secret one bit away: %v, want %v", err, auth.ErrNonceForged)
	}
	// The issue time is covered by the MAC: moving it forges the nonce.
	raw := decodeNonce(t, a.Issue(now))
	binary.BigEndian.PutUint32(raw, binary.BigEndian.Uint32(raw)+1)
	if err := a.Check(base64.RawURLEncoding.EncodeToString(raw), now); !errors.Is(err, auth.ErrNonceForged) {
		t.Errorf("nonce with its time moved: %v, want %v", err, auth.ErrNonceForged)
	}
}

func TestNonceLength(t *testing.T) {
	for i := range 50 {
		n := newNonces(t, nil, 0)
		for _, at := range []time.Time{now, time.Unix(0, 0), time.Unix(1<<32-1, 0), now.Add(time.Duration(i) * 7919 * time.Second)} {
			nonce := n.Issue(at)
			if len(nonce) != auth.NonceLen || auth.NonceLen != 22 {
				t.Fatalf("nonce %q of %d characters, want 22", nonce, len(nonce))
			}
			for _, c := range []byte(nonce) {
				if !stunQDText(c) || !strings.ContainsRune(base64URL, rune(c)) {
					t.Fatalf("nonce %q holds %q: not qdtext of base64url", nonce, c)
				}
			}
		}
	}
}

const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// stunQDText reports whether an ASCII byte may stand unquoted in a NONCE
// (RFC 8489 §14.10: qdtext of RFC 3261, less LWS and UTF8-NONASCII, which a
// nonce has no use for).
func stunQDText(c byte) bool {
	return c == 0x21 || (0x23 <= c && c <= 0x5b) || (0x5d <= c && c <= 0x7e)
}

func TestNonceSecretCarriesOver(t *testing.T) {
	old := newNonces(t, nil, 0)
	nonce := old.Issue(now)
	secret := old.Secret()
	if len(secret) != auth.NonceSecretLen {
		t.Fatalf("Secret() of %d bytes, want %d", len(secret), auth.NonceSecretLen)
	}
	successor := newNonces(t, secret, 0)
	if err := successor.Check(nonce, now.Add(10*time.Minute)); err != nil {
		t.Errorf("predecessor's nonce in the successor: %v", err)
	}
	if got := successor.Issue(now); got != nonce {
		t.Errorf("successor issues %q for the predecessor's %q", got, nonce)
	}
	// Neither the secret handed in nor the one handed out is shared.
	secret[0] ^= 0xff
	old.Secret()[1] ^= 0xff
	if err := successor.Check(nonce, now); err != nil {
		t.Errorf("a changed copy of the secret changed the successor: %v", err)
	}
	if err := old.Check(nonce, now); err != nil {
		t.Errorf("a changed Secret() changed the issuer: %v", err)
	}
}

func TestNewNoncesRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret []byte
		life   time.Duration
		want   error
	}{
		{"empty secret", []byte{}, 0, auth.ErrNonceSecret},
		{"short secret", make([]byte, auth.NonceSecretLen-1), 0, auth.ErrNonceSecret},
		{"long secret", make([]byte, auth.NonceSecretLen+1), 0, auth.ErrNonceSecret},
		{"negative lifetime", nil, -time.Hour, auth.ErrNonceLifetime},
		{"lifetime under a second", nil, 999 * time.Millisecond, auth.ErrNonceLifetime},
	} {
		if n, err := auth.NewNonces(c.secret, c.life); !errors.Is(err, c.want) || n != nil {
			t.Errorf("%s: %v, %v; want %v", c.name, n, err, c.want)
		}
	}
}

func TestNonceMalformed(t *testing.T) {
	n := newNonces(t, nil, 0)
	valid := n.Issue(now)
	for _, c := range []struct{ name, nonce string }{
		{"empty", ""},
		{"one short", valid[:auth.NonceLen-1]},
		{"one long", valid + "A"},
		{"padded", valid + "=="},
		{"std padding inside", valid[:20] + "=="},
		{"plus", "+" + valid[1:]},
		{"slash", valid[:5] + "/" + valid[6:]},
		{"space", valid[:5] + " " + valid[6:]},
		{"quote", `"` + valid[1:]},
		{"LF inside", valid[:10] + "\n" + valid[11:]},
		{"CRLF at the end", valid[:20] + "\r\n"},
		{"NUL", valid[:21] + "\x00"},
		{"UTF-8", valid[:20] + "é"},
		{"trailing bits set", nonCanonical(valid)},
		{"pion's hex form", strings.Repeat("0", 80)},
	} {
		if err := n.Check(c.nonce, now); !errors.Is(err, auth.ErrNonceMalformed) {
			t.Errorf("%s (%q): %v, want %v", c.name, c.nonce, err, auth.ErrNonceMalformed)
		}
	}
	// One character changed within the alphabet decodes, and is forged.
	for i := range auth.NonceLen - 1 {
		b := []byte(valid)
		b[i] = base64URL[(strings.IndexByte(base64URL, b[i])+1)%64]
		if err := n.Check(string(b), now); !errors.Is(err, auth.ErrNonceForged) {
			t.Errorf("character %d changed (%q): %v, want %v", i, b, err, auth.ErrNonceForged)
		}
	}
}

// The format is what a successor must accept, so it is pinned to RFC 2104
// HMAC-SHA256 rather than to this package's own computation of it.
func TestNonceMACIsHMACSHA256(t *testing.T) {
	n := newNonces(t, nil, 0)
	raw := decodeNonce(t, n.Issue(now))
	if got := binary.BigEndian.Uint32(raw); int64(got) != now.Unix() {
		t.Fatalf("issue time %d, want %d", got, now.Unix())
	}
	mac := hmac.New(sha256.New, n.Secret())
	mac.Write(raw[:4])
	if want := mac.Sum(nil)[:12]; !bytes.Equal(raw[4:], want) {
		t.Errorf("MAC %x, want HMAC-SHA256 %x", raw[4:], want)
	}
}

func TestNonceDoesNotAllocate(t *testing.T) {
	n := newNonces(t, nil, 0)
	valid := n.Issue(now)
	for _, c := range []struct{ name, nonce string }{
		{"valid", valid},
		{"malformed", valid[:21] + "!"},
		{"forged", newNonces(t, nil, 0).Issue(now)},
	} {
		if allocs := testing.AllocsPerRun(100, func() { _ = n.Check(c.nonce, now) }); allocs != 0 {
			t.Errorf("Check of a %s nonce: %v allocations, want 0", c.name, allocs)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = n.Check(valid, now.Add(2*time.Hour)) }); allocs != 0 {
		t.Errorf("Check of a stale nonce: %v allocations, want 0", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = n.Issue(now) }); allocs > 1 {
		t.Errorf("Issue: %v allocations, want at most the string's", allocs)
	}
}

func BenchmarkNonceCheck(b *testing.B) {
	n := newNonces(b, nil, 0)
	nonce := n.Issue(now)
	b.ReportAllocs()
	for b.Loop() {
		if n.Check(nonce, now) != nil {
			b.Fatal("refused")
		}
	}
}

func decodeNonce(t testing.TB, nonce string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(nonce)
	if err != nil || len(raw) != 16 {
		t.Fatalf("nonce %q: %d bytes, %v", nonce, len(raw), err)
	}
	return raw
}
