package turn

import "errors"

var (
	// ErrAdmissionQuota is an Admission's refusal: a quota it keeps is reached.
	ErrAdmissionQuota = errors.New("admission quota reached")
	// ErrAdmissionUnavailable is an Admission's refusal when it cannot
	// decide (its store is down) and its rule is to refuse.
	ErrAdmissionUnavailable = errors.New("admission unavailable")
)
