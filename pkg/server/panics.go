package server

import (
	"fmt"
	"sync/atomic"
	"time"
)

// panicLogEvery bounds panic log lines: one hostile packet repeated at line
// rate must not turn into a log flood; the metric counts every one.
const panicLogEvery = time.Second

// panicked reports a panic recovered while handling one packet.
func (s *Server) panicked(v any) {
	s.obs.PanicRecovered()
	now := time.Now().UnixNano()
	last := s.lastPanicLog.Load()
	if now-last < int64(panicLogEvery) || !s.lastPanicLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Error("recovered from a panic while handling a packet; the packet was dropped",
		"panic", fmt.Sprint(v))
}

// panicClock is the last time a panic was logged, in Unix nanoseconds.
type panicClock = atomic.Int64
