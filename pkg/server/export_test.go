package server

// UDPSocketCount returns how many client-facing UDP sockets are bound, over
// every SO_REUSEPORT group.
func (s *Server) UDPSocketCount() int { return len(s.udp) }
