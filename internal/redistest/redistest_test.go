package redistest

import (
	"context"
	"net"
	"testing"
)

// TestStartRetriesTakenPort: a port another process takes between freePort
// and redis-server's bind costs a retry on another port, not the test.
func TestStartRetriesTakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	tries := 0
	r := StartOn(t, func() int {
		if tries++; tries == 1 {
			return taken
		}
		return FreePort(t)
	}, "--port", "PORT")
	if r.Port == taken || tries != 2 {
		t.Fatalf("started on port %d after %d tries; %d was taken", r.Port, tries, taken)
	}
	if err := r.Admin().Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping the retried server: %v", err)
	}
}
