package mmsg

import "errors"

// ErrNotUDP is FromFile's error for a descriptor that is not a bound UDP
// socket.
var ErrNotUDP = errors.New("not a bound udp socket")
