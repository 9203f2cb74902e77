package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"runtime"
	"time"
)

// Modes of operation; see the usage text in main.go.
const (
	modeRelay  = "relay"
	modeAlloc  = "alloc"
	modeIdle   = "idle"
	modeStream = "stream"
)

// Bounds that keep a run finite and inside what one process can hold.
const (
	// maxRelayDuration stays under the 5-minute permission lifetime both
	// turnd and coturn default to: relay mode does not refresh permissions
	// or channels, so a longer run would measure their expiry.
	maxRelayDuration = 4 * time.Minute
	maxIdleDuration  = time.Hour
	maxClients       = 15000 // one socket each; the usual fd limit is 20000
	maxRate          = 2_000_000
	minSize          = payloadHeader
	maxSize          = 1400 // one unfragmented datagram on any real path
)

// options is the parsed and validated command line.
type options struct {
	mode            string
	server          *net.UDPAddr
	user, pass      string
	realm           string // "" means the realm the server announces
	clients         int
	concurrency     int
	rate            float64 // messages per second, total, each way
	duration        time.Duration
	size            int
	peer            *net.UDPAddr // nil means turnload's own echo
	sendIndications bool
	json            bool
	serverPID       int
	workers         int
	echoSockets     int
	batch           int
	grace           time.Duration
	lifetime        time.Duration
	refresh         time.Duration
	timeout         time.Duration
}

// parseArgs parses "MODE [flags]" and validates the result, reporting every
// problem at once.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	if len(args) == 0 || (args[0] != modeRelay && args[0] != modeAlloc && args[0] != modeIdle && args[0] != modeStream) {
		return options{}, fmt.Errorf("first argument must be a mode (relay, alloc, idle or stream): %w", errUsage)
	}
	o := options{mode: args[0]}
	fs := flag.NewFlagSet("turnload "+o.mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "127.0.0.1:3478", "TURN server `ip:port` (UDP)")
	peer := fs.String("peer", "", "external UDP echo peer `ip:port`; empty runs turnload's own echo on 127.0.0.1")
	fs.StringVar(&o.user, "user", "demo", "long-term credential user name")
	fs.StringVar(&o.pass, "pass", "demo", "long-term credential password")
	fs.StringVar(&o.realm, "realm", "", "realm; empty uses the one the server announces")
	fs.IntVar(&o.clients, "clients", 100, "client allocations (one UDP socket each); stream: the idle ones beside the stream")
	fs.IntVar(&o.concurrency, "concurrency", 64, "clients set up (or, in alloc mode, run) at the same time")
	fs.Float64Var(&o.rate, "rate", 10000, "relay: messages per second, all clients together, each way; stream: the stream's (default 200)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "relay, stream: sending time; idle: holding time")
	fs.IntVar(&o.size, "size", 100, "relay, stream: payload bytes per message")
	fs.BoolVar(&o.sendIndications, "send-indications", false, "relay: Send/Data indications instead of ChannelData")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.IntVar(&o.serverPID, "server-pid", 0, "PID of the server on this machine, to report its CPU time and memory")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "relay: sending goroutines")
	fs.IntVar(&o.echoSockets, "echo-sockets", runtime.GOMAXPROCS(0), "SO_REUSEPORT sockets of the built-in echo peer")
	fs.IntVar(&o.batch, "batch", 32, "relay: most datagrams per sendmmsg/recvmmsg")
	fs.DurationVar(&o.grace, "grace", 2*time.Second, "relay, stream: longest wait for echoes after the last send")
	fs.DurationVar(&o.lifetime, "lifetime", 10*time.Minute, "requested allocation lifetime")
	fs.DurationVar(&o.refresh, "refresh", 2*time.Minute, "idle: interval between Refresh and ChannelBind renewals")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "longest wait for one STUN transaction, retransmissions included")
	if err := fs.Parse(args[1:]); err != nil {
		return options{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q: %w", fs.Args(), errUsage)
	}
	if o.mode == modeStream && !isSet(fs, "rate") {
		o.rate = defaultStreamRate // relay's default is a load, not a stream
	}
	var errs []error
	var err error
	if o.server, err = parseUDPAddr(*server); err != nil {
		errs = append(errs, fmt.Errorf("--server: %w", err))
	}
	if *peer != "" {
		if o.peer, err = parseUDPAddr(*peer); err != nil {
			errs = append(errs, fmt.Errorf("--peer: %w", err))
		}
	}
	errs = append(errs, o.validate()...)
	if len(errs) > 0 {
		return options{}, fmt.Errorf("%w: %w", errUsage, errors.Join(errs...))
	}
	return o, nil
}

// validate checks ranges; each problem names its flag.
func (o *options) validate() []error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	if o.mode == modeStream {
		check(o.clients >= 0 && o.clients < maxClients, "--clients: must be 0..%d", maxClients-1)
	} else {
		check(o.clients >= 1 && o.clients <= maxClients, "--clients: must be 1..%d", maxClients)
	}
	check(o.concurrency >= 1, "--concurrency: must be >= 1")
	check(o.user != "", "--user: must not be empty")
	check(o.timeout > 0, "--timeout: must be > 0")
	check(o.lifetime >= time.Second, "--lifetime: must be >= 1s")
	check(o.echoSockets >= 1 && o.echoSockets <= 64, "--echo-sockets: must be 1..64")
	switch o.mode {
	case modeRelay:
		check(o.rate > 0 && o.rate <= maxRate, "--rate: must be > 0 and <= %d", maxRate)
		check(o.duration > 0 && o.duration <= maxRelayDuration, "--duration: must be > 0 and <= %v", maxRelayDuration)
		check(o.size >= minSize && o.size <= maxSize, "--size: must be %d..%d", minSize, maxSize)
		check(o.workers >= 1 && o.workers <= 256, "--workers: must be 1..256")
		check(o.batch >= 1 && o.batch <= 1024, "--batch: must be 1..1024")
		check(o.grace >= 0 && o.grace <= time.Minute, "--grace: must be 0..1m")
	case modeStream:
		// The stream's one socket is read by one goroutine: a few thousand a second at most.
		check(o.rate > 0 && o.rate <= 5000, "--rate: must be > 0 and <= 5000")
		check(o.duration > 0 && o.duration <= maxRelayDuration, "--duration: must be > 0 and <= %v", maxRelayDuration)
		check(o.size >= minSize && o.size <= maxSize, "--size: must be %d..%d", minSize, maxSize)
		check(o.grace >= 0 && o.grace <= time.Minute, "--grace: must be 0..1m")
	case modeIdle:
		check(o.duration > 0 && o.duration <= maxIdleDuration, "--duration: must be > 0 and <= %v", maxIdleDuration)
		check(o.refresh > 0 && o.refresh < o.lifetime, "--refresh: must be > 0 and shorter than --lifetime")
	}
	return errs
}

// defaultStreamRate is stream mode's rate without --rate: a voice call's
// packet rate, about.
const defaultStreamRate = 200

// isSet reports whether the command line gave the flag.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseUDPAddr accepts only a literal "ip:port": a load generator should not
// depend on name resolution, and a name would hide which family is used.
func parseUDPAddr(s string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("parse address: %w", err)
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("parse address %q: not an IP literal: %w", s, errUsage)
	}
	a, err := net.ResolveUDPAddr("udp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("parse address: %w", err)
	}
	if a.Port == 0 {
		return nil, fmt.Errorf("parse address %q: port 0: %w", s, errUsage)
	}
	return a, nil
}
