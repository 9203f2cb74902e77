package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what HTTP clients can hold. The listener is often bound on a
// node's address (the Helm chart does), so anyone who reaches it must not be
// able to pin goroutines and descriptors there.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included: a client
	// trickling a body byte by byte is cut.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing an answer to a client that does not read.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxConns caps open connections; further ones are closed on accept.
	MaxConns int
	// MaxHeaderBytes caps a request's header block; past it the request is
	// answered 431. 0 leaves net/http's 1 MB.
	MaxHeaderBytes int
}

// DefaultLimits are generous for probes and scrapers (a handful of
// connections, answers in milliseconds) and tight for anyone else.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxConns:          128,
		// A probe, a scrape or an admin request with its bearer token sends
		// a few hundred bytes of headers; 1 MB per connection would let the
		// connection cap pin over 100 MB.
		MaxHeaderBytes: 8 << 10,
	}
}

// NewServer returns an http.Server for h with l's timeouts. Serve it on a
// listener wrapped with LimitListener(ln, l.MaxConns).
func NewServer(h http.Handler, l Limits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// LimitListener returns ln with at most max connections open at once; a
// connection over the cap is closed as soon as it is accepted. Unlike
// x/net's netutil.LimitListener it does not stop accepting, so the backlog
// never fills up with connections that wait for minutes: once the load goes,
// the next probe is served at once. max <= 0 means no cap.
func LimitListener(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, free: max}
}

type limitListener struct {
	net.Listener
	mu   sync.Mutex
	free int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		ok := l.free > 0
		if ok {
			l.free--
		}
		l.mu.Unlock()
		if ok {
			return &limitedConn{Conn: c, l: l}, nil
		}
		_ = c.Close()
	}
}

type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.free++
		c.l.mu.Unlock()
	})
	return err
}
