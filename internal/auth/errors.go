package auth

import "errors"

// Sentinel errors returned by Store.Keys. Clients should see the same answer
// (401) for all of them; the wrapped text is for logs only.
var (
	// ErrUnknownUser means the username is neither a static user nor a
	// well-formed TURN REST username for which secrets are configured.
	ErrUnknownUser = errors.New("unknown user")
	// ErrExpired means a TURN REST username's expiry is not in the future.
	ErrExpired = errors.New("credential expired")
	// ErrTooLong means a TURN REST username expires further ahead than
	// Options.MaxValidity allows.
	ErrTooLong = errors.New("credential valid for longer than allowed")
	// ErrRevoked means the user ID is listed in auth.revoked_users.
	ErrRevoked = errors.New("user revoked")
	// ErrRealmMismatch means the request names a realm other than the configured one.
	ErrRealmMismatch = errors.New("realm mismatch")
)

// Sentinel errors returned by Nonces.Check. Clients see the same answer (438
// Stale Nonce, with a fresh nonce) for all of them.
var (
	// ErrNonceMalformed means the nonce is not of the form Issue writes.
	ErrNonceMalformed = errors.New("malformed nonce")
	// ErrNonceForged means the nonce's MAC is not this secret's: another
	// process's nonce, or a made-up one.
	ErrNonceForged = errors.New("nonce not issued under this secret")
	// ErrNonceStale means the nonce is at least its lifetime old, or issued
	// further ahead of now than NonceSkew.
	ErrNonceStale = errors.New("stale nonce")
)

// Sentinel errors returned by NewNonces.
var (
	// ErrNonceSecret means a secret to take over is not NonceSecretLen bytes.
	ErrNonceSecret = errors.New("bad nonce secret length")
	// ErrNonceLifetime means the lifetime is negative or under a second.
	ErrNonceLifetime = errors.New("bad nonce lifetime")
)
