// Package stuntest builds the STUN and ChannelData packets that the tests of
// the gate and of the edge send, and holds their shared fuzz seeds. It is
// for tests only: no production package may import it.
package stuntest
