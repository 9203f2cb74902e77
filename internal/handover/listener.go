package handover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Listener is the hand-over socket of a running turnd. Only root and the
// process's own user may talk to it.
type Listener struct {
	// Refused, if set before Accept, hears of each peer turned away.
	Refused func(error)

	ul   *net.UnixListener
	addr string
	// dev and ino identify the socket file this listener bound, so that
	// Remove leaves a successor's alone.
	dev, ino uint64
	bound    bool

	mu     sync.Mutex // orders Remove's check before the close
	closed bool
}

// Listen binds the hand-over socket at addr: a filesystem path, or
// "@name" for an abstract socket. A path's directory is made (0700) if
// missing, a socket file nobody answers on is replaced, and one somebody
// answers on is ErrInUse (the probe reaches that process's Accept as a
// connection closed at once).
func Listen(addr string) (*Listener, error) {
	if addr == "" {
		return nil, errors.New("listen hand-over socket: empty address")
	}
	abstract := strings.HasPrefix(addr, "@")
	if !abstract {
		if err := os.MkdirAll(filepath.Dir(addr), 0o700); err != nil {
			return nil, fmt.Errorf("listen hand-over socket: %w", err)
		}
		if err := clearStale(addr); err != nil {
			return nil, fmt.Errorf("listen hand-over socket %s: %w", addr, err)
		}
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		if errors.Is(err, unix.EADDRINUSE) {
			err = ErrInUse
		}
		return nil, fmt.Errorf("listen hand-over socket %s: %w", addr, err)
	}
	// Close must not unlink: by then the path may be the successor's.
	ul.SetUnlinkOnClose(false)
	l := &Listener{ul: ul, addr: addr}
	if !abstract {
		if err := os.Chmod(addr, 0o600); err != nil {
			_ = ul.Close()
			_ = os.Remove(addr)
			return nil, fmt.Errorf("listen hand-over socket %s: %w", addr, err)
		}
		l.identify()
	}
	return l, nil
}

// clearStale removes a socket file at path that nobody answers on.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return errors.New("exists and is not a socket")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err == nil {
		_ = c.Close()
		return ErrInUse
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return fmt.Errorf("probe existing socket: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

func (l *Listener) identify() {
	fi, err := os.Lstat(l.addr)
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode()&os.ModeSocket != 0 {
		l.dev, l.ino, l.bound = st.Dev, st.Ino, true
	}
}

// FileListener adopts a listening hand-over socket another process
// passed; f stays the caller's to close. The socket file now at its path
// is taken for the one it bound.
func FileListener(f *os.File) (*Listener, error) {
	nl, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("adopt hand-over socket: %w", err)
	}
	ul, ok := nl.(*net.UnixListener)
	if !ok {
		_ = nl.Close()
		return nil, errors.New("adopt hand-over socket: not a unix listener")
	}
	ul.SetUnlinkOnClose(false)
	l := &Listener{ul: ul, addr: ul.Addr().String()}
	if !strings.HasPrefix(l.addr, "@") {
		l.identify()
	}
	return l, nil
}

// File returns a duplicate of the listening socket, to pass on.
func (l *Listener) File() (*os.File, error) {
	f, err := Dup(l.ul, "handover:"+l.addr)
	if err != nil {
		return nil, fmt.Errorf("dup hand-over socket: %w", err)
	}
	return f, nil
}

// Dup duplicates c's descriptor as a file to pass on, leaving the shared
// open file as it is: net's File would make it blocking, in this process
// too, until something sets it back.
func Dup(c syscall.Conn, name string) (*os.File, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	return os.NewFile(uintptr(fd), name), nil
}

// Addr returns the address: a path, or "@name".
func (l *Listener) Addr() string { return l.addr }

// Accept returns the next connection from root or this process's user.
// Any other peer is told "permission denied" and closed, and Accept waits
// for the next one.
func (l *Listener) Accept() (*Conn, error) {
	for {
		uc, err := l.ul.AcceptUnix()
		if err != nil {
			return nil, fmt.Errorf("accept hand-over connection: %w", err)
		}
		c, err := newConn(uc)
		if err != nil {
			return nil, err
		}
		if err := checkPeer(uc, os.Getuid()); err != nil {
			_ = uc.SetWriteDeadline(time.Now().Add(time.Second))
			_ = c.Refuse("permission denied")
			_ = c.Close()
			if l.Refused != nil {
				l.Refused(err)
			}
			continue
		}
		return c, nil
	}
}

func checkPeer(uc *net.UnixConn, self int) error {
	cred, err := peerCred(uc)
	if err != nil {
		return err
	}
	if !allowed(cred.Uid, self) {
		return fmt.Errorf("%w: pid %d uid %d", errPeer, cred.Pid, cred.Uid)
	}
	return nil
}

// peerCred is the credentials of the process at the other end of uc.
func peerCred(uc *net.UnixConn) (*unix.Ucred, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("peer credentials: %w", cerr)
	}
	return cred, nil
}

// allowed is the one rule: root, or the user turnd runs as.
func allowed(uid uint32, self int) bool {
	return uid == 0 || int64(uid) == int64(self)
}

// Close stops listening and leaves the socket file: the path may be the
// successor's by now.
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.ul.Close()
}

// Remove unlinks the socket file if it is still the one this listener
// bound, then closes the listener. The check is exact only while the
// socket is open (a closed one's inode number may be reused by the next
// socket bound there), so after Close, Remove unlinks nothing.
func (l *Listener) Remove() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.unlinkOwn()
	if cerr := l.ul.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close hand-over socket: %w", cerr)
	}
	return err
}

func (l *Listener) unlinkOwn() error {
	if !l.bound {
		return nil
	}
	fi, err := os.Lstat(l.addr)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove hand-over socket: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Dev != l.dev || st.Ino != l.ino {
		return nil // a successor's
	}
	if err := os.Remove(l.addr); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove hand-over socket: %w", err)
	}
	return nil
}
