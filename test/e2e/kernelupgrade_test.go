package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestKernelPathAcrossUpgrade: a channel the kernel relays goes on through
// `turnd upgrade` with no datagram lost either way: the old process takes
// its entries out as it pauses (what arrives then waits in the relay
// sockets' queues, which move), the successor puts its own back once it
// serves and relays in the kernel from then on, and the usage record the
// successor writes holds everything: what the old process's kernel path
// relayed, what was queued during the switch, and the successor's own.
func TestKernelPathAcrossUpgrade(t *testing.T) {
	k := newKernelNet(t)
	srv := &kernelServer{ns: k.turnd, cfg: kernelConfig(t), offload: "tc"}
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	srv.write(t, path, srv.cfg)
	l := startChain(t, path, []string{"ip", "netns", "exec", string(k.turnd)})
	srv.turnd = l.turnd
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	before := payloads("before", 30)
	ch.throughKernel(t, srv, before)

	// Both ends send throughout the upgrade, one datagram each way every
	// millisecond, until it is over and then some: bounded in count.
	const most, after = 5000, 50
	upgraded := make(chan struct{})
	sent := make(chan int, 1)
	go func() {
		n, tail := 0, -1
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ; n < most && (tail < 0 || n < tail); n++ {
			if tail < 0 {
				select {
				case <-upgraded:
					tail = n + after
				default:
				}
			}
			p := fmt.Sprintf("switch-%d", n)
			frame := binary.BigEndian.AppendUint16(nil, ch.number)
			frame = binary.BigEndian.AppendUint16(frame, uint16(len(p)))
			_, _ = ch.c.Conn().Write(append(frame, p...))
			_, _ = peer.conn.WriteToUDP([]byte(p), ch.relay)
			<-tick.C
		}
		sent <- n
	}()
	successor, took := l.upgrade()
	close(upgraded)
	n := <-sent
	t.Logf("turnd upgrade: pid %d in %v; %d datagrams each way sent across it", successor.pid, took.Round(time.Millisecond), n)

	// The datagrams queued in the sockets during the switch are read by the
	// successor while its kernel path relays new ones: a few may arrive out
	// of order, none may be missing.
	atPeer, atClient := map[string]bool{}, map[string]bool{}
	overtaken, highest := 0, -1
	for i := range n {
		d, ok := peer.next(5 * time.Second)
		if !ok {
			t.Fatalf("%d of the %d datagrams sent across the upgrade reached the peer", i, n)
		}
		var seq int
		if _, err := fmt.Sscanf(d.payload, "switch-%d", &seq); err == nil {
			if seq < highest {
				overtaken++
			}
			highest = max(highest, seq)
		}
		atPeer[d.payload] = true
	}
	for i := range n {
		f, err := ch.c.ReadFrame(5 * time.Second)
		if err != nil || len(f) < 4 || binary.BigEndian.Uint16(f) != ch.number {
			t.Fatalf("%d of the %d datagrams the peer sent across the upgrade reached the client as ChannelData (%v)", i, n, err)
		}
		atClient[string(f[4:])] = true
	}
	for i := range n {
		if p := fmt.Sprintf("switch-%d", i); !atPeer[p] || !atClient[p] {
			t.Fatalf("%q sent across the upgrade: reached the peer %v, the client %v; want both", p, atPeer[p], atClient[p])
		}
	}
	t.Logf("%d of %d datagrams to the peer arrived after a later one (queued during the switch)", overtaken, n)
	// The successor's kernel path relays the channel.
	last := payloads("after", 30)
	ch.throughKernel(t, srv, last)

	if code := ch.c.Refresh(0); code != 0 {
		t.Fatalf("Refresh lifetime 0: error %d", code)
	}
	srv.waitLog("allocation deleted", 5*time.Second)
	packets, size := 30+n+30, 0
	for _, p := range append(before, last...) {
		size += len(p)
	}
	for i := range n {
		size += len(fmt.Sprintf("switch-%d", i))
	}
	recs := srv.usageRecords("udp", "released")
	if len(recs) != 1 || recs[0]["to_peer_packets"] != float64(packets) || recs[0]["from_peer_packets"] != float64(packets) ||
		recs[0]["to_peer_bytes"] != float64(size) || recs[0]["from_peer_bytes"] != float64(size) {
		t.Fatalf("usage records %v, want one with %d packets and %d bytes each way", recs, packets, size)
	}
}

// TestKernelPathAfterFailedUpgrade: a hand-over that fails after the old
// process froze (the successor cannot bind a listener the config adds)
// puts the old process's kernel entries back as it thaws: the channel is
// relayed in the kernel again, and its usage record holds both stretches.
func TestKernelPathAfterFailedUpgrade(t *testing.T) {
	k := newKernelNet(t)
	srv := &kernelServer{ns: k.turnd, cfg: kernelConfig(t), offload: "tc"}
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	srv.write(t, path, srv.cfg)
	wrapper := []string{"ip", "netns", "exec", string(k.turnd)}
	l := startChain(t, path, wrapper)
	srv.turnd = l.turnd
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	before := payloads("before", 30)
	ch.throughKernel(t, srv, before)

	var busy net.Listener
	if err := k.turnd.do(func() (err error) {
		busy, err = net.Listen("tcp4", net.JoinHostPort(kServer4, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	grown := srv.cfg
	grown.Listen.TCP = []string{busy.Addr().String()}
	srv.write(t, path, grown)
	ctx, cancel := context.WithTimeout(context.Background(), upgradeCommandTimeout)
	defer cancel()
	argv := append(append([]string{}, wrapper...), turndBin, "upgrade", "--pid", strconv.Itoa(l.serving().pid))
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("turnd upgrade with a listener the successor cannot bind: %v (%v), want it to fail at once:\n%s", err, ctx.Err(), out)
	}
	if l.serving().exited() {
		t.Fatal("the old turnd exited after a failed upgrade")
	}
	thawed := payloads("thawed", 30)
	ch.throughKernel(t, srv, thawed)

	if code := ch.c.Refresh(0); code != 0 {
		t.Fatalf("Refresh lifetime 0: error %d", code)
	}
	srv.waitLog("allocation deleted", 5*time.Second)
	size := 0
	for _, p := range append(before, thawed...) {
		size += len(p)
	}
	recs := srv.usageRecords("udp", "released")
	if len(recs) != 1 || recs[0]["to_peer_packets"] != 60.0 || recs[0]["to_peer_bytes"] != float64(size) ||
		recs[0]["from_peer_packets"] != 60.0 || recs[0]["from_peer_bytes"] != float64(size) {
		t.Fatalf("usage records %v, want one with 60 packets and %d bytes each way", recs, size)
	}
}
