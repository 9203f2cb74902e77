package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/pkg/config"
)

// alpnTURN is the ALPN protocol ID of TURN over TLS (RFC 7443 §4.3).
const alpnTURN = "stun.turn"

// bind has the edge open the client-facing sockets cfg.Listen names.
func (s *Server) bind(cfg config.Config) error {
	l, err := s.listen(cfg)
	if err != nil {
		return err
	}
	s.sockets, err = edge.Bind(l)
	return err
}

// listen is what the edge binds, or adopts, for cfg.
func (s *Server) listen(cfg config.Config) (edge.Listen, error) {
	proxy, err := s.proxyOptions(cfg)
	if err != nil {
		return edge.Listen{}, err
	}
	l := edge.Listen{
		UDP:     cfg.Listen.UDP,
		Sockets: cfg.Listen.UDPSockets,
		Buffer:  cfg.Listen.SocketBuffer,
		TCP:     cfg.Listen.TCP,
		Proxy:   proxy,
		Limits:  connLimits(cfg),
		Refused: s.obs.ConnectionRefused,
	}
	if cfg.ServesTLS() {
		l.TLS, l.TCPTLS = cfg.Listen.TLS, cfg.Listen.TCPTLS
		l.TLSConfig = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// RFC 7443: an ALPN-routing proxy in front of a shared 443 sends
			// "stun.turn" here and HTTPS elsewhere; clients that offer no
			// ALPN at all are still served.
			NextProtos: []string{alpnTURN},
			// Read on every handshake, so SIGHUP can swap the certificate.
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil },
		}
	}
	return l, nil
}

// connLimits are limits.connections_per_ip, connections_per_prefix and
// connections.
func connLimits(cfg config.Config) edge.ConnLimits {
	_, perPrefix := cfg.Limits.PrefixCaps()
	return edge.ConnLimits{PerIP: cfg.Limits.ConnectionsPerIP, PerPrefix: perPrefix, Total: cfg.Limits.Connections}
}

// proxyOptions are listen.proxy_protocol's, nil when no listener has it.
func (s *Server) proxyOptions(cfg config.Config) (*edge.Proxy, error) {
	pp := cfg.Listen.ProxyProtocol
	if len(pp.Listeners) == 0 {
		return nil, nil
	}
	p := &edge.Proxy{
		Listeners: pp.Listeners,
		Refused: func(reason string, from net.Addr) {
			s.obs.ProxyRefused(reason)
			if held, ok := s.allow(s.logRate.proxy.Of(reason), slog.LevelInfo); ok {
				s.log.Info("connection refused: proxy protocol", loglimit.Args(held, "reason", reason, "from", from.String())...)
			}
		},
	}
	for _, str := range pp.Trusted {
		prefix, err := config.ParsePrefix(str)
		if err != nil {
			return nil, fmt.Errorf("listen.proxy_protocol.trusted: %w", err)
		}
		p.Trusted = append(p.Trusted, prefix)
	}
	return p, nil
}
