package httpapi

import "errors"

var (
	// ErrEmptyToken means the admin token file holds no token.
	ErrEmptyToken = errors.New("admin token file is empty")
	// ErrTokenWorldWritable means every user may write the admin token
	// file, so the token it holds proves nothing.
	ErrTokenWorldWritable = errors.New("admin token file is writable by every user")
)
