package auth

import (
	"fmt"
	"strings"
	"time"
)

// maxExpiry is the last second of year 9999. Anything later is not a
// timestamp a credential service would issue, so it is treated as malformed
// rather than as a credential that never expires.
const maxExpiry = 253402300799

// restUsername is a parsed TURN REST username, "<expiry>[<sep><user>]".
type restUsername struct {
	expiry time.Time
	userID string
}

// parseREST splits a TURN REST username at the first separator. The error
// always wraps ErrUnknownUser so that clients cannot tell which part was bad.
func parseREST(username, sep string) (restUsername, error) {
	stamp, user, hasUser := strings.Cut(username, sep)
	secs, err := parseExpiry(stamp)
	if err != nil {
		return restUsername{}, err
	}
	id := username
	if hasUser && user != "" {
		id = user
	}
	return restUsername{expiry: time.Unix(secs, 0), userID: id}, nil
}

// parseExpiry accepts only plain decimal digits: strconv would also take a
// sign, which a REST username never has.
func parseExpiry(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("parse rest username: empty expiry: %w", ErrUnknownUser)
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("parse rest username: expiry is not a decimal number: %w", ErrUnknownUser)
		}
		v = v*10 + int64(c-'0')
		// Checked per digit so that long inputs cannot overflow v.
		if v > maxExpiry {
			return 0, fmt.Errorf("parse rest username: expiry beyond year 9999: %w", ErrUnknownUser)
		}
	}
	return v, nil
}
