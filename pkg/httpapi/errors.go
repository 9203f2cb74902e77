package httpapi

import "errors"

// ErrEmptyToken means the admin token file holds no token.
var ErrEmptyToken = errors.New("admin token file is empty")
