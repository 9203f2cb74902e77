package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// forEach calls fn(i) for every i in [0, n) on at most c goroutines, and
// hands out no new index once ctx ends.
func forEach(ctx context.Context, n, c int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, c) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// errorCounts tallies errors by a short class, safe for concurrent use.
type errorCounts struct {
	mu sync.Mutex
	m  map[string]int
	n  int
}

func (e *errorCounts) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]int{}
	}
	e.m[errClass(err)]++
	e.n++
}

// errClass names an error for a tally: the STUN error code, a timeout, or
// the error text cut short.
func errClass(err error) string {
	var re *responseError
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("%s %d", re.method, re.code)
	case errors.Is(err, errTimeout):
		return "timeout"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// setupSessions opens o.clients sessions, o.concurrency at a time, and
// prepares each with prepare (allocate, bind...). Sessions that fail are
// closed and counted; the rest are returned in index order.
func setupSessions(ctx context.Context, o *options, bigBuffers bool, prepare func(*session) error) ([]*session, setupReport) {
	start := time.Now()
	all := make([]*session, o.clients)
	var errs errorCounts
	forEach(ctx, o.clients, o.concurrency, func(i int) {
		s, err := dialSession(i, o, bigBuffers)
		if err == nil {
			if err = prepare(s); err != nil {
				// Leave nothing behind on the server either.
				if s.relayed != nil {
					_ = s.release()
				}
				s.close()
			}
		}
		if err != nil {
			errs.add(err)
			return
		}
		all[i] = s
	})
	var ok []*session
	for _, s := range all {
		if s != nil {
			ok = append(ok, s)
		}
	}
	return ok, setupReport{OK: len(ok), Failed: errs.n, Seconds: time.Since(start).Seconds(), Errors: errs.m}
}

// releaseAll deletes every allocation (Refresh lifetime 0) and closes the
// sockets, o.concurrency at a time; it runs even after ctx ended, so a
// stopped run leaves nothing on the server.
func releaseAll(o *options, sessions []*session) *errorCounts {
	var errs errorCounts
	forEach(context.Background(), len(sessions), o.concurrency, func(i int) {
		if err := sessions[i].release(); err != nil {
			errs.add(err)
		}
		sessions[i].close()
	})
	return &errs
}
