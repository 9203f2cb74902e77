package procstat

import "errors"

// ErrMalformed means a /proc file did not have the expected layout.
var ErrMalformed = errors.New("malformed /proc file")
