// Package testproxy holds small layer-4 proxies that tests put in front of
// turnd to play the edge of a deployment: a router that picks a backend by
// the TLS ClientHello's ALPN (as nginx ssl_preread does) and a forwarder
// that announces the client with a PROXY protocol header (as HAProxy or a
// cloud load balancer does). They listen on loopback only and stop with the
// test.
package testproxy
