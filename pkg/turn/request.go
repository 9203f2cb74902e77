package turn

import (
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
)

// Request is one message, decoded and authenticated once; every answer to
// it is signed with Key.
type Request struct {
	// Msg is decoded in place over the bytes Serve was given: no copy, and
	// valid only during Serve.
	Msg  *stun.Message
	From *bindings.Client
	// Now is read once per request.
	Now time.Time
	// User is the user ID the credentials name (a REST username's user
	// part); Username and Realm are as the request carried them.
	User, Username, Realm string
	// Key is the key that verified MESSAGE-INTEGRITY (one of several REST
	// secrets'); nil for an unauthenticated request, whose answers go
	// unsigned.
	Key []byte
	// Alloc is the allocation of the request's 5-tuple, looked up once;
	// nil: none.
	Alloc *allocation.Allocation

	policy      *Policy // read once, so one request sees one policy
	fingerprint bool    // the request carried FINGERPRINT: so does every answer
}
