// Package fleet is one node's view of a turnd fleet kept in Redis:
// fleet-wide allocation quotas held under leases, the live nodes with their
// load and sessions, disconnect and revocation that reach every node, and a
// stream of usage records for billing.
//
// Calls that wait on Redis, each within the caller's ctx and its own
// deadline: Admit (one round trip, two after Redis lost its scripts;
// Options.Timeout), Nodes, LeastLoaded and Sessions (two round trips;
// Lease/3), Disconnect (one PUBLISH; Lease/3), and Open (the first beat,
// then the control subscription; Lease/3 each). Close waits at most about
// Lease/3 to write the queued usage and leave the fleet. Everything the
// relay path or a live call could wait on (Release, Hold, Usage, Publish,
// PublishRates, SetRevoked) is queued and written in the background;
// Stats, Revoked, OthersRate and Node read memory only. Detach is Close
// for a hand-over: the node's entries stay for its successor.
//
// A call whose caller's ctx ends first says nothing of Redis and leaves
// the Client up (Open's first beat excepted: a node not yet registered
// starts down and registers at its first probe). A failure within the
// Client's own deadline takes it down: Admit then fails fast with
// ErrUnavailable until a probe finds Redis again, and then the node
// rewrites its own counts, so the fleet state is rebuilt from the nodes
// rather than trusted from Redis.
//
// Lease times are Redis's own clock (TIME inside the scripts), so nodes
// whose clocks disagree still agree on who is live.
//
// The package knows nothing of HTTP, Prometheus, pion, the allocation table
// or sockets other than its Redis connections: the server feeds it plain
// values and learns of events through the callbacks in Options. Nothing it
// writes to Redis lets a reader forge credentials: no secret, password or
// key is ever stored.
package fleet
