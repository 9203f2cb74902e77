package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/turnd/turnd/pkg/config"
)

// ephemeralRangeFile holds the kernel's range of ports for outgoing
// connections (IPv6 sockets use it as well).
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// ephemeralOverlap returns a warning when the relay port range overlaps the
// kernel's ephemeral range: other programs' outgoing sockets then take relay
// ports, and allocations fail or lose the P+1 of an RTP/RTCP pair. read
// returns the range file's contents; "" means no overlap, or a range that
// cannot be read (not Linux, a sandbox), which is no reason to warn.
func ephemeralOverlap(relay config.Relay, read func() ([]byte, error)) string {
	data, err := read()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return ""
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || relay.MaxPort < lo || relay.MinPort > hi {
		return ""
	}
	var fixes []string
	if hi < 65535 && hi < relay.MaxPort {
		fixes = append(fixes, fmt.Sprintf("relay.min_port: %d", hi+1))
	}
	switch {
	case relay.MinPort > lo:
		fixes = append(fixes, fmt.Sprintf("sysctl net.ipv4.ip_local_port_range=\"%d %d\"", lo, relay.MinPort-1))
	case relay.MaxPort < hi:
		fixes = append(fixes, fmt.Sprintf("sysctl net.ipv4.ip_local_port_range=\"%d %d\"", relay.MaxPort+1, hi))
	}
	return fmt.Sprintf("relay ports %d-%d overlap the kernel's ephemeral port range %d-%d (net.ipv4.ip_local_port_range): "+
		"outgoing connections of other programs can take relay ports; fix: %s",
		relay.MinPort, relay.MaxPort, lo, hi, strings.Join(fixes, ", or "))
}

// readEphemeralRange reads the kernel's ephemeral port range.
func readEphemeralRange() ([]byte, error) { return os.ReadFile(ephemeralRangeFile) }
