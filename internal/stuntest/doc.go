// Package stuntest builds the STUN and ChannelData packets that the tests of
// the edge and the handlers send, and holds their shared fuzz seeds. It is
// for tests only: no production package may import it.
package stuntest
