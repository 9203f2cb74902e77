// Package drain is turnd's lifecycle state machine: serving, then draining,
// then stopped.
//
// A drain has two explicit parts, as in Caddy's shutdown. During the Delay
// (lame duck) readiness already fails, so load balancers take the instance
// out, but new allocations are still accepted. After it, new allocations are
// refused (the server itself answers them, because clients often hard-code
// TURN addresses) while existing relays keep working, and the machine stops as
// soon as the allocation count reaches zero or the deadline passes, whichever
// comes first. Everything is event-driven: there is no polling.
//
// Signals and the signal channel (matching coturn operators' habits):
//   - Drain (SIGUSR1) starts a drain; ignored while already draining.
//   - Terminate (SIGTERM, SIGINT) starts a drain; a Terminate while draining
//     stops at once, whatever started the drain. A drain started with SIGUSR1 is
//     therefore cut short by a later SIGTERM: that matches coturn 4.6.3+, where
//     SIGTERM during a drain is an immediate stop, and a second request to
//     terminate is the operator's way out of a drain they no longer want to
//     wait for. To let a SIGUSR1 drain run its course, do not send SIGTERM.
//   - Quit (SIGQUIT) stops at once in any phase.
//
// The package knows nothing about HTTP, Prometheus, pion or os/signal: time
// comes from an injected Clock, signals from a channel, the allocation count
// from the Allocations interface, and observers learn of changes through
// Config.OnChange. Package draintest has a fake clock and allocation counter
// for tests.
package drain
