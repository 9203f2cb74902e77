// Package fleet is one node's view of a turnd fleet kept in Redis:
// fleet-wide allocation quotas held under leases, the live nodes with their
// load and sessions, disconnect and revocation that reach every node, and a
// stream of usage records for billing.
//
// Only Admit waits on Redis, with a deadline; everything the relay path or
// a live call could wait on (Release, Hold, Usage, Publish, SetRevoked) is
// queued and written in the background. When Redis fails the Client goes
// down: Admit fails fast with ErrUnavailable until a probe finds Redis
// again, and then the node rewrites its own counts, so the fleet state is
// rebuilt from the nodes rather than trusted from Redis.
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
