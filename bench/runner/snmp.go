package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// udpCounters reads the kernel's UDP counters of this network namespace
// (the "Udp:" lines of /proc/net/snmp), by name: RcvbufErrors counts the
// datagrams a full socket receive buffer dropped, on any socket.
func udpCounters() (map[string]int64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return nil, fmt.Errorf("read udp counters: %w", err)
	}
	var rows [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Udp: "); ok {
			rows = append(rows, strings.Fields(rest))
		}
	}
	if len(rows) != 2 || len(rows[0]) != len(rows[1]) {
		return nil, fmt.Errorf("read udp counters: no Udp header and values in /proc/net/snmp: %w", errParse)
	}
	m := make(map[string]int64, len(rows[0]))
	for i, name := range rows[0] {
		v, err := strconv.ParseInt(rows[1][i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read udp counter %s: %w", name, err)
		}
		m[name] = v
	}
	return m, nil
}
