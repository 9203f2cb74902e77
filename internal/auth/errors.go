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
