package turn_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/stuntest"
)

// FuzzServe feeds any bytes to Serve as a UDP client's datagram, on a real
// table and the fake relay: it must not panic; it answers at most once, a
// STUN response of the request's method and transaction; and an answer it
// gives unsigned (to a request it could not verify) is at most
// maxAmplification times the request.
func FuzzServe(f *testing.F) {
	e := newEnv(f)
	for _, s := range stuntest.FuzzSeeds(f) {
		f.Add(s)
	}
	for _, s := range [][]byte{
		e.build(f, stun.MethodAllocate, aliceUser(), transportUDP()),
		e.build(f, stun.MethodAllocate, aliceUser(), transportUDP(), dual(0x8032), rawAttr(stun.AttrEvenPort, 0x80)),
		e.build(f, stun.MethodAllocate, user{restUser, restKey("s2")}, transportUDP(), lifetime(time.Hour)),
		e.build(f, stun.MethodRefresh, aliceUser(), lifetime(0)),
		e.build(f, stun.MethodCreatePermission, aliceUser(), peerAttr("192.0.2.1:9"), peerAttr("[2001:db8::1]:9")),
		e.build(f, stun.MethodChannelBind, aliceUser(), channelAttr(0x4000), peerAttr("192.0.2.1:9")),
		e.build(f, stun.MethodConnect, aliceUser(), peerAttr("192.0.2.1:9")),
		e.build(f, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(0x7F01, 1)),
		raw(f, stun.TransactionID, stun.BindingRequest, stun.Fingerprint),
		raw(f, stun.TransactionID, stun.NewType(methodUnknown, stun.ClassRequest)),
	} {
		f.Add(s)
	}
	c, l := udpClient(1)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		in := bytes.Clone(pkt)
		e.h.Serve(pkt, c)
		if !bytes.Equal(in, pkt) {
			t.Fatal("Serve changed its input")
		}
		got := l.take()
		if len(got) > 1 {
			t.Fatalf("%d answers to one message", len(got))
		}
		if len(got) == 0 {
			return
		}
		req := &stun.Message{Raw: in}
		resp := &stun.Message{Raw: got[0]}
		if err := req.Decode(); err != nil {
			t.Fatalf("answered a message that does not decode (%v)", err)
		}
		if err := resp.Decode(); err != nil {
			t.Fatalf("answer does not decode: %v", err)
		}
		if resp.TransactionID != req.TransactionID || resp.Type.Method != req.Type.Method ||
			(resp.Type.Class != stun.ClassSuccessResponse && resp.Type.Class != stun.ClassErrorResponse) {
			t.Fatalf("answered %v of %x to %v of %x", resp.Type, resp.TransactionID, req.Type, req.TransactionID)
		}
		if !resp.Contains(stun.AttrMessageIntegrity) && len(got[0]) > maxAmplification*len(in) {
			t.Fatalf("unsigned answer of %d B to %d B", len(got[0]), len(in))
		}
	})
}
