// Package handover is the wire protocol by which a running turnd (the old
// process) hands its sockets and its state to a successor (the new one)
// over a Unix stream socket, and by which `turnd upgrade` asks a running
// turnd to upgrade.
//
// Messages are length-prefixed JSON objects; descriptors travel with
// SCM_RIGHTS in batches attached to dedicated frames. The state is opaque
// bytes and the descriptors are opaque files: the package knows nothing
// about TURN, allocations or what a socket is for. Linux only, as turnd is.
//
// A take-over, as the old process sees it:
//
//	req, _ := c.ReadRequest(ctx)        // hello {versions, pid}
//	v, ok := Choose(req.Versions, ours) // or c.Refuse(reason)
//	c.Offer(Offer{Version: v, State: s, Names: n, Files: f})
//	err := c.AwaitServing(ctx)          // nil once the new one serves
//	c.Commit()
//
// and as the new one does: Hello, ReceiveOffer, Serving (or Fail),
// AwaitCommit.
package handover
