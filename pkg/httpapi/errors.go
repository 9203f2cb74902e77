package httpapi

import "errors"

var (
	// ErrEmptyToken means a bearer token file (admin or credentials) holds
	// no token.
	ErrEmptyToken = errors.New("token file is empty")
	// ErrTokenWorldWritable means every user may write a bearer token
	// file, so the token it holds proves nothing.
	ErrTokenWorldWritable = errors.New("token file is writable by every user")
	// ErrUnavailable means the fleet cannot answer now (Redis is down, no
	// node is ready, nothing to sign credentials with): the endpoint
	// answers 503. Fleet callbacks wrap it.
	ErrUnavailable = errors.New("fleet unavailable")
	// ErrBadUser means no REST username can carry the user asked for:
	// GET /credentials answers 400. Fleet.Credentials wraps it.
	ErrBadUser = errors.New("bad user name")
)
