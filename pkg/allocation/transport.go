package allocation

// Transport is the client-facing transport an allocation was made over.
type Transport uint8

// The client transports turnd listens on.
const (
	UDP Transport = iota
	TCP
	TLS
	numTransports
)

// Transports lists every transport, in a stable order for reports.
func Transports() []Transport { return []Transport{UDP, TCP, TLS} }

// String returns the lower-case name used in metrics labels and /status.
func (t Transport) String() string {
	switch t {
	case UDP:
		return "udp"
	case TCP:
		return "tcp"
	case TLS:
		return "tls"
	default:
		return "unknown"
	}
}
