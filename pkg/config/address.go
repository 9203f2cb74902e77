package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// checkHostPort returns what is wrong with s as an "ip:port" address whose
// port is at least minPort, or "" when nothing is. Listen addresses pass
// minPort 0 ("any free port", which tests rely on); peers of the server,
// such as alternate servers, pass 1.
func checkHostPort(s string, minPort int) string {
	_, msg := parseHostPort(s, minPort)
	return msg
}

// checkServer returns what is wrong with s as the address of another server,
// "ip:port" or "name:port" with a port from 1, or "" when nothing is.
func checkServer(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || isIP(host) {
		return checkHostPort(s, 1)
	}
	if !isDNSName(host) {
		return fmt.Sprintf("%q: host %q is neither an IP address nor a DNS name", s, host)
	}
	n, err := strconv.ParseUint(port, 10, 32)
	switch {
	case port == "":
		return fmt.Sprintf("%q: missing port", s)
	case err != nil:
		return fmt.Sprintf("%q: port %q is not a number", s, port)
	case n < 1 || n > 65535:
		return fmt.Sprintf("%q: port %d is out of range 1-65535", s, n)
	}
	return ""
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// isDNSName reports whether s is a host name: dot-separated labels of
// letters, digits and inner hyphens (RFC 1123), at most 253 characters.
func isDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// parseHostPort is checkHostPort that also returns the parsed address.
func parseHostPort(s string, minPort int) (netip.AddrPort, string) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Sprintf("%q: %s", s, splitProblem(err))
	}
	if host == "" {
		return netip.AddrPort{}, fmt.Sprintf("%q: host must be an IP address (0.0.0.0 or [::] means every interface)", s)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Sprintf("%q: host %q is not an IP address", s, host)
	}
	if port == "" {
		return netip.AddrPort{}, fmt.Sprintf("%q: missing port", s)
	}
	n, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return netip.AddrPort{}, fmt.Sprintf("%q: port %q is not a number", s, port)
	}
	if n < uint64(minPort) || n > 65535 {
		return netip.AddrPort{}, fmt.Sprintf("%q: port %d is out of range %d-65535", s, n, minPort)
	}
	return netip.AddrPortFrom(ip, uint16(n)), ""
}

// splitProblem turns net.SplitHostPort's complaint into advice.
func splitProblem(err error) string {
	var ae *net.AddrError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	switch {
	case strings.HasPrefix(ae.Err, "missing port"):
		return "missing port"
	case strings.HasPrefix(ae.Err, "too many colons"):
		return `IPv6 addresses need brackets and a port, as in "[::1]:3478"`
	}
	return strings.TrimSuffix(ae.Err, " in address")
}

// checkIP returns what is wrong with s as a bare IP address, or "".
func checkIP(s string) string {
	if _, err := netip.ParseAddr(s); err != nil {
		if _, _, err := net.SplitHostPort(s); err == nil {
			return fmt.Sprintf("%q: must be an IP address without a port", s)
		}
		return fmt.Sprintf("%q: not an IP address", s)
	}
	return ""
}

// ParsePrefix reads an IP or a CIDR as a prefix (an IP is a /32 or /128).
func ParsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse %q as an IP or CIDR: %w", s, err)
	}
	return p.Masked(), nil
}

// checkPrefix returns what is wrong with s as an IP or a CIDR, or "".
func checkPrefix(s string) string {
	if _, err := ParsePrefix(s); err != nil {
		return fmt.Sprintf("%q: not an IP address or CIDR", s)
	}
	return ""
}

// SplitAddresses splits relay.address or relay.external_address, one IP or
// an IPv4 and an IPv6 separated by a comma, into its addresses.
func SplitAddresses(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// isUnspecified reports whether s is 0.0.0.0 or :: (false for non-IPs).
func isUnspecified(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.IsUnspecified()
}
