package handover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EnvFD names the environment variable that carries a child's end of Pair.
const EnvFD = "TURND_HANDOVER_FD"

// Conn is one end of a hand-over conversation. Its methods are not safe
// for concurrent use, except Close, which wakes a blocked call.
type Conn struct {
	uc  *net.UnixConn
	raw syscall.RawConn
	rd  *bufio.Reader

	mu      sync.Mutex // guards pending against Close
	pending []int      // descriptors received and not yet handed out
	broken  error      // set once a read stopped mid-stream
	oob     []byte
}

func newConn(uc *net.UnixConn) (*Conn, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("hand-over connection: %w", err)
	}
	c := &Conn{uc: uc, raw: raw, oob: make([]byte, unix.CmsgSpace(4*253))}
	c.rd = bufio.NewReaderSize(fdReader{c}, 64<<10)
	return c, nil
}

// Dial connects to a hand-over socket: a path, or "@name" for an
// abstract socket.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, fmt.Errorf("dial hand-over socket: %w", err)
	}
	return newConn(nc.(*net.UnixConn))
}

// Pair returns a connected pair: parent stays here, child is for a
// process started with it in exec.Cmd.ExtraFiles (which clears its
// close-on-exec flag there) and EnvFD naming its number. The caller
// closes child once the process started.
func Pair() (parent *Conn, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("hand-over socket pair: %w", err)
	}
	child = os.NewFile(uintptr(fds[1]), "handover-child")
	parent, err = fileConn(os.NewFile(uintptr(fds[0]), "handover-parent"))
	if err != nil {
		_ = child.Close()
		return nil, nil, err
	}
	return parent, child, nil
}

// FromEnv makes a Conn of the descriptor EnvFD names and unsets the
// variable, so that no process this one starts believes it is a successor.
// It reports false, and no error, when the variable is not set.
func FromEnv() (*Conn, bool, error) {
	s, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, false, nil
	}
	_ = os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 0 {
		return nil, false, fmt.Errorf("%s=%q: not a descriptor", EnvFD, s)
	}
	c, err := fileConn(os.NewFile(uintptr(fd), "handover-env"))
	if err != nil {
		return nil, false, fmt.Errorf("%s=%d: %w", EnvFD, fd, err)
	}
	return c, true, nil
}

// fileConn adopts f (and closes it: net.FileConn keeps a close-on-exec
// duplicate, so the inherited descriptor leaks into no later child).
func fileConn(f *os.File) (*Conn, error) {
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("adopt hand-over socket: %w", err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		_ = nc.Close()
		return nil, errors.New("adopt hand-over socket: not a unix socket")
	}
	if typ, err := getsockoptInt(uc, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		_ = uc.Close()
		return nil, errors.New("adopt hand-over socket: not a unix stream socket")
	}
	return newConn(uc)
}

func getsockoptInt(uc *net.UnixConn, opt int) (int, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var v int
	var serr error
	if err := raw.Control(func(fd uintptr) { v, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt) }); err != nil {
		return 0, err
	}
	return v, serr
}

// Close closes the connection and every descriptor received and not yet
// handed out.
func (c *Conn) Close() error {
	err := c.uc.Close()
	c.mu.Lock()
	closeFds(c.pending)
	c.pending = nil
	c.mu.Unlock()
	return err
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// takeFds hands out every received descriptor.
func (c *Conn) takeFds() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	fds := c.pending
	c.pending = nil
	return fds
}

func (c *Conn) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// fdReader reads the stream with recvmsg, keeping every descriptor that
// rides along: the kernel attaches a batch to whichever read first touches
// its bytes, so any read may bring some.
type fdReader struct{ c *Conn }

func (r fdReader) Read(p []byte) (int, error) {
	c := r.c
	var n, oobn, flags int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), p, c.oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if oobn > 0 {
		fds, perr := parseRights(c.oob[:oobn])
		c.mu.Lock()
		c.pending = append(c.pending, fds...)
		c.mu.Unlock()
		if perr != nil {
			return 0, perr
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		return 0, errors.New("receive descriptors: control message truncated")
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("receive descriptors: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		fds = append(fds, got...)
		if err != nil {
			return fds, fmt.Errorf("receive descriptors: %w", err)
		}
	}
	return fds, nil
}

// read reads one message, honouring ctx: its deadline becomes the
// socket's and its cancellation wakes the read. A read that stops
// mid-stream leaves the conversation broken for good.
func (c *Conn) read(ctx context.Context) (message, error) {
	if c.broken != nil {
		return message{}, c.broken
	}
	if err := ctx.Err(); err != nil {
		return message{}, err
	}
	// Setting it also clears what an earlier read left: its deadline, or
	// the past one of a cancellation that came as that read succeeded.
	dl, _ := ctx.Deadline()
	if err := c.uc.SetReadDeadline(dl); err != nil {
		return message{}, fmt.Errorf("set read deadline: %w", err)
	}
	woke := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(woke)
		_ = c.uc.SetReadDeadline(time.Unix(1, 0))
	})
	m, err := readFrame(c.rd)
	if !stop() {
		<-woke // its deadline must not outlive this read
	}
	if err == nil {
		return m, nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		} else if !dl.IsZero() {
			err = context.DeadlineExceeded // the socket's timer fired first
		}
	}
	c.broken = err
	return message{}, err
}

// write sends m, with fds attached to its first byte.
func (c *Conn) write(m message, fds []int) error {
	buf, err := encodeFrame(m)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for len(buf) > 0 {
		var n int
		var werr error
		err := c.raw.Write(func(fd uintptr) bool {
			n, werr = unix.SendmsgN(int(fd), buf, oob, nil, unix.MSG_NOSIGNAL)
			return werr != unix.EAGAIN
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return fmt.Errorf("send %s message: %w", m.Type, err)
		}
		buf, oob = buf[n:], nil // the kernel took the descriptors with the first byte
	}
	return nil
}
