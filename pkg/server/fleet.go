package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/fleet"
)

// fleetNode is this server's part in a fleet (fleet.*): the Admission the
// handlers ask, the usage records and state it publishes, and the fleet's
// disconnects and revocations applied here. Nil when fleet is off; its
// methods are then not called.
type fleetNode struct {
	s    *Server
	opts fleet.Options

	client atomic.Pointer[fleet.Client] // nil until open (a successor opens it once it serves)
	mu     sync.Mutex                   // orders early counts and the ends below against the client's arrival
	early  map[string]int               // counts held before the client opened
	usage  []fleet.Record               // usage records ended before it opened
	// retired: a successor took over (retire); closed: close ran. An open
	// still connecting when either happened retires or closes its client.
	retired, closed bool
	stopOnce        sync.Once

	revoked atomic.Pointer[[]string] // the union of every node's auth.revoked_users

	admitted, refused, fallback atomic.Uint64

	drainChanged chan struct{} // the drain's changes, for the state it publishes
	stop         chan struct{}
	done         chan struct{}
}

// maxEarlyUsage bounds the usage records kept for a client not open yet.
const maxEarlyUsage = 10000

// newFleetNode builds the fleet's options from cfg; nothing connects yet.
func newFleetNode(s *Server, cfg config.Config) (*fleetNode, error) {
	o, err := fleetOptions(cfg.Fleet)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f := &fleetNode{s: s, early: make(map[string]int), drainChanged: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	o.OnChange = f.changed
	o.OnDisconnect = f.disconnected
	o.OnRevoked = f.revokedChanged
	f.opts = o
	return f, nil
}

// fleetOptions turns fleet.* into the client's options: the password file
// into the URL, the CA file into a TLS config.
func fleetOptions(c config.Fleet) (fleet.Options, error) {
	o := fleet.Options{URL: c.Redis, Node: c.Node, Prefix: c.Prefix, Lease: c.Lease, Timeout: c.Timeout}
	if o.Node == "" {
		h, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("name the node (fleet.node): %w", err)
		}
		o.Node = h
	}
	u, err := url.Parse(c.Redis)
	if err != nil {
		return o, errors.New("fleet.redis: not a URL") // url's error would quote the password
	}
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return o, fmt.Errorf("read fleet.password_file: %w", err)
		}
		user := ""
		if u.User != nil {
			user = u.User.Username()
		}
		u.User = url.UserPassword(user, strings.TrimSpace(string(b)))
		o.URL = u.String()
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return o, fmt.Errorf("read fleet.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return o, errors.New("fleet.ca_file: no PEM certificate in it")
		}
		o.TLS = &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	return o, nil
}

// open connects to the fleet and starts publishing; Redis being down is
// not an error (the client probes on). Counts and usage kept before it
// opened go to the client first.
func (f *fleetNode) open() error {
	o := f.opts
	st := f.state()
	o.State = &st // listed with its URIs from the first beat on
	c, err := fleet.Open(context.Background(), o)
	if err != nil {
		return fmt.Errorf("open fleet: %w", err)
	}
	c.SetRevoked(f.s.cfg.Load().Auth.RevokedUsers)
	f.mu.Lock()
	if f.closed || f.retired {
		// Too late to serve; the usage ended meanwhile is still written.
		usage, retired, closed := f.usage, f.retired, f.closed
		f.usage = nil
		if !closed {
			// Retired while connecting: what stays here writes its usage
			// to this client until close detaches it; no run loop.
			c.Retire()
			f.client.Store(c)
			close(f.done)
		}
		f.mu.Unlock()
		for _, r := range usage {
			c.Usage(r)
		}
		switch {
		case !closed:
			return nil
		case retired:
			return c.Detach()
		}
		return c.Close()
	}
	for user, n := range f.early {
		for range n {
			c.Hold(user)
		}
	}
	for _, r := range f.usage {
		c.Usage(r)
	}
	f.early, f.usage = nil, nil
	f.client.Store(c)
	f.mu.Unlock()
	f.s.setFleetRates(c) // limits.user_total_bps shared with the other nodes
	if len(f.s.advertised()) == 0 {
		f.s.log.Warn("fleet: this node advertises no TURN URI (its listening addresses are wildcards): " +
			"set fleet.advertise, or no draining node redirects here and /credentials never names it")
	}
	go f.run(c)
	return nil
}

// openLater opens the fleet on a goroutine of its own: a successor serves
// at once, its first Allocates counted until the client is there.
func (f *fleetNode) openLater() {
	go func() {
		if err := f.open(); err != nil {
			f.s.log.Error("fleet", "err", err)
		}
	}()
}

// retire is a hand-over's Commit: the successor counts and publishes for
// this node's name from now on, and the allocations that stay here only
// write their usage records. It does not wait for Redis.
func (f *fleetNode) retire() {
	f.mu.Lock()
	f.retired = true
	c := f.client.Load()
	f.mu.Unlock()
	if c == nil {
		return
	}
	c.Retire()     // at once: from now on the successor's counts are the name's
	go f.stopRun() // the run loop may be waiting on Redis
}

// close leaves the fleet, or, once retired, detaches from it: the node's
// entries are the successor's.
func (f *fleetNode) close() {
	f.mu.Lock()
	f.closed = true
	c, retired := f.client.Load(), f.retired
	f.mu.Unlock()
	if c == nil {
		return
	}
	f.stopRun()
	var err error
	if retired {
		err = c.Detach()
	} else {
		err = c.Close()
	}
	if err != nil && !errors.Is(err, fleet.ErrClosed) {
		f.s.log.Warn("fleet: leaving", "err", err)
	}
}

// stopRun stops the loop open started, and the rate sharing, once.
func (f *fleetNode) stopRun() {
	f.stopOnce.Do(func() {
		close(f.stop)
		<-f.done
		f.s.setFleetRates(nil)
	})
}

// changed logs a change between Redis usable and not, once per change.
func (f *fleetNode) changed(up bool, err error) {
	if up {
		f.s.log.Info("fleet: redis reachable again; this node's counts rebuilt", "node", f.opts.Node)
		return
	}
	rule := "fall back to this node's limits"
	if f.s.cfg.Load().Fleet.OnOutage == "refuse" {
		rule = "are refused (486)"
	}
	f.s.log.Warn("fleet: redis unreachable; live calls go on, new allocations "+rule, "node", f.opts.Node, "err", err)
}

// setRevoked publishes this node's auth.revoked_users to the fleet (open
// publishes them for a client not open yet).
func (f *fleetNode) setRevoked(users []string) {
	if c := f.client.Load(); c != nil {
		c.SetRevoked(users)
	}
}

// tee passes every signal from in to a and to b, coalesced, until done.
func tee(in <-chan struct{}, b chan struct{}, done <-chan struct{}) <-chan struct{} {
	a := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-in:
				wakeUp(a)
				wakeUp(b)
			case <-done:
				return
			}
		}
	}()
	return a
}

// wakeUp sends a coalesced signal on ch.
func wakeUp(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // one is pending; it covers this one
	}
}
