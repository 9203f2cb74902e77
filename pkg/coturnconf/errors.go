package coturnconf

import "errors"

var (
	// ErrInvalidResult means the coturn options could not be turned into a
	// turnd config that validates: a required piece (a credential, a relay
	// address clients can reach, a listener) is missing or was not carried
	// over. The findings say what to add.
	ErrInvalidResult = errors.New("converted config does not validate")
)
