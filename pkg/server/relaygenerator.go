package server

import (
	"fmt"
	"net"

	"github.com/pion/turn/v5"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/relay"
)

// relayGenerator hands pion the shared relay for one listening socket, as
// its RelayAddressGenerator: relay sockets learn their lane (the fast path
// answers clients through it), reservation hints are applied, and
// allocations that could not be served are counted (pion answers those 508).
func (s *Server) relayGenerator(lane *mmsg.Socket, hint *edge.PortHint) turn.RelayAddressGenerator {
	return socketGenerator{relay: s.relay, s: s, obs: s.obs, lane: lane, hint: hint}
}

// streamGenerator is relayGenerator for a plain TCP listener: its clients'
// downlink is served by the relay's loops.
func (s *Server) streamGenerator() turn.RelayAddressGenerator {
	return socketGenerator{relay: s.relay, s: s, obs: s.obs, stream: true}
}

// socketGenerator is pion's RelayAddressGenerator over the relay: the
// only place that turns pion's allocation requests into relay calls.
type socketGenerator struct {
	relay  *relay.Relay
	s      *Server
	obs    Observer
	lane   *mmsg.Socket
	hint   *edge.PortHint
	stream bool
}

// Validate checks the relay's options when pion starts serving.
func (c socketGenerator) Validate() error { return c.relay.Validate() }

// AllocatePacketConn makes the UDP relay socket of an allocation.
func (c socketGenerator) AllocatePacketConn(conf turn.AllocateListenerConfig) (conn net.PacketConn, addr net.Addr, err error) {
	defer c.catch(&err)
	if p := c.hint.Take(); p != 0 && conf.RequestedPort == 0 {
		conf.RequestedPort = p
	}
	even := c.hint.TakeEven() && conf.RequestedPort == 0
	// pion's EVEN-PORT probes come without a port; the allocation itself
	// asks for the even port pion picked, and gets a held pair instead.
	if conf.RequestedPort != 0 && c.hint.TakeReserve() {
		conn, addr, err = c.relay.AllocatePair(conf.Network, c.lane)
	} else if c.stream {
		conn, addr, err = c.relay.AllocateUDPForStream(conf.Network, conf.RequestedPort)
	} else {
		conn, addr, err = c.relay.AllocateUDP(conf.Network, conf.RequestedPort, c.lane)
	}
	if err == nil && even {
		// Even ports are tried first: an odd one means none was free.
		if ua, ok := addr.(*net.UDPAddr); ok && ua.Port%2 != 0 {
			_ = conn.Close()
			conn, addr, err = nil, nil, fmt.Errorf("allocate even relay port: %w", relay.ErrNoFreePort)
		}
	}
	if err != nil {
		c.obs.AllocationRejected(RejectCapacity)
	}
	return conn, addr, err
}

// AllocateListener makes the listener of an RFC 6062 TCP relay.
func (c socketGenerator) AllocateListener(conf turn.AllocateListenerConfig) (ln net.Listener, addr net.Addr, err error) {
	defer c.catch(&err)
	ln, addr, err = c.relay.AllocateTCP(conf.Network, conf.RequestedPort)
	if err != nil {
		c.obs.AllocationRejected(RejectCapacity)
	}
	return ln, addr, err
}

// AllocateConn dials an RFC 6062 Connect's peer, behind catch like the rest.
func (c socketGenerator) AllocateConn(conf turn.AllocateConnConfig) (conn net.Conn, err error) {
	defer c.catch(&err)
	return c.relay.Connect(conf.Network, conf.LocalAddr, conf.RemoteAddr)
}

// catch is Server.catch for the relay address generator, which must return
// an error (pion answers 508) rather than a nil socket.
func (c socketGenerator) catch(err *error) {
	if v := recover(); v != nil {
		c.s.recovered("relay address generator", v)
		*err = fmt.Errorf("allocate relay: %w", errRecovered)
	}
}
