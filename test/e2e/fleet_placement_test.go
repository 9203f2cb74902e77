package e2e

import (
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/config"
)

// TestFleetCredentialsNameEveryReadyNode: with three ready nodes and
// credentials.nodes 3, /credentials names all three, its credentials relay
// through each node it names, and while Redis is down it answers 503.
func TestFleetCredentialsNameEveryReadyNode(t *testing.T) {
	f := newFleet(t)
	var nodes []*turnd
	for _, name := range []string{"a", "b", "c"} {
		cfg := f.config(name)
		cfg.Limits.UserAllocations = 16 // uclient takes two per client
		nodes = append(nodes, start(t, cfg))
	}
	var udp []string
	eventually(t, 5*time.Second, "an answer naming every node's UDP listener", func() bool {
		code, body := f.do(nodes[0], http.MethodGet, "/credentials?user=carol")
		if code != http.StatusOK {
			return false
		}
		udp = udp[:0]
		for _, s := range decodeCredentials(t, body).URIs {
			if u, err := config.ParseTURNURI(s); err == nil && u.Transport == "udp" && !u.Secure {
				udp = append(udp, net.JoinHostPort(u.Host, itoa(int(u.Port))))
			}
		}
		return len(udp) == 3
	})
	for _, p := range nodes {
		if !slices.Contains(udp, p.UDP) {
			t.Fatalf("the answer's UDP URIs %v miss node %s", udp, p.UDP)
		}
	}
	_, body := f.do(nodes[1], http.MethodGet, "/credentials?user=carol")
	creds := decodeCredentials(t, body)
	peer := itoa(startPeer(t))
	for _, server := range udp {
		r := uclient(t, uclientTimeout, server, "-u", creds.Username, "-w", creds.Password,
			"-e", "127.0.0.1", "-r", peer, "-X", "-c", "-m", "1", "-n", "10", "-l", "100")
		requireZeroLoss(t, r, 10)
	}

	f.redis.Stop()
	eventually(t, 5*time.Second, "503 while Redis is down", func() bool {
		code, _ := f.do(nodes[2], http.MethodGet, "/credentials?user=carol")
		return code == http.StatusServiceUnavailable
	})
}
