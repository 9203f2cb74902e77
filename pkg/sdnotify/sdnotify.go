// Package sdnotify tells systemd about turnd's state through the sd_notify
// protocol (READY=1, STOPPING=1, STATUS=...), so a Type=notify unit knows when
// turnd is serving and when it has begun to drain.
//
// The protocol is one datagram of newline-separated assignments sent to the
// unix socket named by $NOTIFY_SOCKET; a leading '@' means an abstract socket.
// The package knows nothing about turnd's drain or config: callers decide
// what to report and when.
//
// Why not github.com/coreos/go-systemd/v22/daemon: its SdNotify is the same
// dial-and-write on $NOTIFY_SOCKET, and turnd uses none of the rest (watchdog,
// socket activation, reload timestamps). Ours also refuses what systemd would
// misread (a newline in STATUS= starts a new assignment) and names a vsock:
// socket it cannot reach instead of failing the dial, with no module (and
// godbus/dbus in the module graph) added for twenty lines.
package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// EnvSocket is the environment variable systemd sets for Type=notify units.
const EnvSocket = "NOTIFY_SOCKET"

// Notifier sends notifications to one systemd notification socket.
// A nil *Notifier is valid: every method is a no-op returning nil, so callers
// need not check whether turnd runs under systemd.
type Notifier struct {
	addr *net.UnixAddr
}

// FromEnv returns a Notifier for $NOTIFY_SOCKET, or nil when it is unset or
// empty (not running under systemd, or not as a notify service).
func FromEnv() *Notifier {
	return New(os.Getenv(EnvSocket))
}

// New returns a Notifier for the socket path (or "@name" abstract socket
// name), or nil when socket is empty.
func New(socket string) *Notifier {
	if socket == "" {
		return nil
	}
	// Go's unix address conversion already maps a leading '@' to the
	// abstract namespace, which is exactly systemd's convention.
	return &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}}
}

// Ready tells systemd that start-up has finished (READY=1).
func (n *Notifier) Ready() error { return n.Notify("READY=1") }

// Stopping tells systemd that shutdown (turnd's drain) has begun (STOPPING=1).
func (n *Notifier) Stopping() error { return n.Notify("STOPPING=1") }

// Status sets the one-line status text shown by `systemctl status`
// (STATUS=s). A newline in s is refused with ErrBadState.
func (n *Notifier) Status(s string) error {
	if strings.Contains(s, "\n") {
		return fmt.Errorf("send status: %w: newline in status text", ErrBadState)
	}
	return n.Notify("STATUS=" + s)
}

// Notify sends state, one or more newline-separated VAR=value assignments, as
// a single datagram. It dials per call: notifications are rare (start, drain,
// a status line now and then) and a fresh socket survives a restarted
// systemd without any reconnect logic.
func (n *Notifier) Notify(state string) error {
	if n == nil {
		return nil
	}
	if state == "" {
		return fmt.Errorf("notify systemd: %w: empty state", ErrBadState)
	}
	if strings.HasPrefix(n.addr.Name, "vsock:") {
		return fmt.Errorf("notify systemd: %w: %s", ErrUnsupportedSocket, n.addr.Name)
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	return nil
}
