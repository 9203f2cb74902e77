package main

import (
	"fmt"
	"net"
	"strconv"
)

// freePort finds a loopback port free for UDP and TCP (coturn and turnd
// listen on both) and, with pair, the UDP port after it too
// (turnutils_peer binds two). The port is released before use, so another
// program could take it meanwhile; on a benchmark machine that is rare, and
// the server's start then fails loudly.
func freePort(pair bool) (int, error) {
	for range 50 {
		u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return 0, fmt.Errorf("probe port: %w", err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		ok := port < 65535
		var closers []interface{ Close() error }
		closers = append(closers, u)
		if ok {
			t, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
			if ok = err == nil; ok {
				closers = append(closers, t)
			}
		}
		if ok && pair {
			u2, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port + 1})
			if ok = err == nil; ok {
				closers = append(closers, u2)
			}
		}
		for _, c := range closers {
			_ = c.Close()
		}
		if ok {
			return port, nil
		}
	}
	return 0, errNoPort
}
