package handover

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// Kind is what the first message on a connection asks for.
type Kind int

const (
	// KindUpgrade: `turnd upgrade` asks the old process to start its
	// successor; answer with AnswerUpgrade.
	KindUpgrade Kind = iota + 1
	// KindTakeOver: a successor asks for the sockets and the state;
	// answer with Offer or Refuse.
	KindTakeOver
)

// Request is the first message on a connection.
type Request struct {
	Kind     Kind
	Versions []int // state versions the successor reads (KindTakeOver)
	PID      int   // the successor's (KindTakeOver)
}

// Offer is what the old process hands over: Files[i] is named Names[i] in
// logs. The sender's Files stay the caller's to close (and must stay open
// until Offer returns); the receiver's are its own. Fds are descriptors
// the sender lends as they are (sent after Files, named after them, never
// closed or changed here): thousands of relay sockets need no duplicate,
// which would double the old process's descriptors at the hand-over. The
// receiver gets them all in Files.
type Offer struct {
	Version int
	State   []byte
	Names   []string
	Files   []*os.File
	Fds     []int
}

// Choose returns the highest version both sides know.
func Choose(theirs, ours []int) (int, bool) {
	best, ok := 0, false
	for _, t := range theirs {
		for _, o := range ours {
			if t == o && (!ok || t > best) {
				best, ok = t, true
			}
		}
	}
	return best, ok
}

// RequestUpgrade asks the old process on c to upgrade and returns the
// successor's PID once it serves; a failure comes back as ErrFailed with
// the old process's reason.
func RequestUpgrade(ctx context.Context, c *Conn) (int, error) {
	if err := c.write(message{Type: typeUpgrade}, nil); err != nil {
		return 0, err
	}
	m, err := c.expect(ctx, "upgrade answer", typeUpgraded, typeError)
	if err != nil {
		return 0, err
	}
	if m.Type == typeError {
		return 0, fmt.Errorf("upgrade: %w: %s", ErrFailed, m.Reason)
	}
	return m.PID, nil
}

// AnswerUpgrade answers a KindUpgrade request: the successor's PID, or
// err's text.
func (c *Conn) AnswerUpgrade(pid int, err error) error {
	if err != nil {
		return c.write(message{Type: typeError, Reason: err.Error()}, nil)
	}
	return c.write(message{Type: typeUpgraded, PID: pid}, nil)
}

// Hello opens a take-over: the state versions this successor reads, and
// its PID.
func (c *Conn) Hello(versions []int, pid int) error {
	return c.write(message{Type: typeHello, Versions: versions, PID: pid}, nil)
}

// ReadRequest reads the first message of a connection the old process
// accepted.
func (c *Conn) ReadRequest(ctx context.Context) (Request, error) {
	m, err := c.expect(ctx, "request", typeUpgrade, typeHello)
	if err != nil {
		return Request{}, err
	}
	if m.Type == typeUpgrade {
		return Request{Kind: KindUpgrade}, nil
	}
	return Request{Kind: KindTakeOver, Versions: m.Versions, PID: m.PID}, nil
}

// Refuse ends a take-over before the offer; the successor's ReceiveOffer
// returns ErrRefused with the reason.
func (c *Conn) Refuse(reason string) error {
	return c.write(message{Type: typeError, Reason: reason}, nil)
}

// Offer sends the version, the state and the descriptors, in batches of
// at most 200. The state travels base64 in one frame, so it may be up to
// about 48 MB. A successor that stops reading blocks Offer until c is
// closed (from the goroutine that waits on the hand-over's timeout).
func (c *Conn) Offer(o Offer) error {
	total := len(o.Files) + len(o.Fds)
	if len(o.Names) != total {
		return fmt.Errorf("send offer: %d names for %d files", len(o.Names), total)
	}
	if total > maxFiles {
		return fmt.Errorf("send offer: %d files over the cap of %d", total, maxFiles)
	}
	fds := make([]int, len(o.Files), total)
	for i, f := range o.Files {
		fd, err := rawFd(f)
		if err != nil {
			return fmt.Errorf("send offer: file %s: %w", o.Names[i], err)
		}
		fds[i] = fd
	}
	fds = append(fds, o.Fds...)
	defer runtime.KeepAlive(o.Files)
	err := c.write(message{Type: typeOffer, Version: o.Version, State: o.State, Names: o.Names, Files: len(fds)}, nil)
	if err != nil {
		return err
	}
	for len(fds) > 0 {
		n := min(len(fds), batch)
		if err := c.write(message{Type: typeFiles, Files: n}, fds[:n]); err != nil {
			return err
		}
		fds = fds[n:]
	}
	return nil
}

// rawFd returns f's descriptor without f.Fd's side effect of making it
// blocking, which would change the socket for its other holders too.
func rawFd(f *os.File) (int, error) {
	if f == nil {
		return 0, os.ErrInvalid
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// ReceiveOffer reads the old process's offer and exactly the descriptors
// it announced. On any error every descriptor received is closed; a
// refusal is ErrRefused with the reason.
func (c *Conn) ReceiveOffer(ctx context.Context) (Offer, error) {
	o, err := c.receiveOffer(ctx)
	if err != nil {
		closeFds(c.takeFds())
		return Offer{}, err
	}
	return o, nil
}

func (c *Conn) receiveOffer(ctx context.Context) (Offer, error) {
	m, err := c.expect(ctx, "offer", typeOffer, typeError)
	if err != nil {
		return Offer{}, err
	}
	if m.Type == typeError {
		return Offer{}, fmt.Errorf("take over: %w: %s", ErrRefused, m.Reason)
	}
	if m.Files < 0 || m.Files > maxFiles || len(m.Names) != m.Files {
		return Offer{}, fmt.Errorf("receive offer: %d names for %d files", len(m.Names), m.Files)
	}
	announced := 0
	for announced < m.Files {
		f, err := c.expect(ctx, "descriptors", typeFiles)
		if err != nil {
			return Offer{}, fmt.Errorf("receive descriptors %d of %d: %w", announced, m.Files, err)
		}
		if f.Files <= 0 || f.Files > 253 || announced+f.Files > m.Files {
			return Offer{}, fmt.Errorf("receive descriptors: a batch of %d after %d of %d", f.Files, announced, m.Files)
		}
		announced += f.Files
		// The batch rides with its frame's first byte, read by now; the
		// read that finished this frame may have begun the next one, and
		// brought its batch too.
		if got := c.pendingCount(); got < announced || got > announced+253 {
			return Offer{}, fmt.Errorf("receive descriptors: %d announced, %d received", announced, got)
		}
	}
	fds := c.takeFds()
	if len(fds) != m.Files {
		closeFds(fds)
		return Offer{}, fmt.Errorf("receive descriptors: %d announced, %d received", m.Files, len(fds))
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), m.Names[i])
	}
	return Offer{Version: m.Version, State: m.State, Names: m.Names, Files: files}, nil
}

// Serving tells the old process that the successor serves.
func (c *Conn) Serving() error { return c.write(message{Type: typeServing}, nil) }

// Fail tells the old process that the successor will not serve.
func (c *Conn) Fail(reason string) error {
	return c.write(message{Type: typeFailed, Reason: reason}, nil)
}

// AwaitServing waits for the successor's answer to the offer: nil once it
// serves, ErrFailed with its reason, ErrClosed if it went away, or ctx's
// error.
func (c *Conn) AwaitServing(ctx context.Context) error {
	m, err := c.expect(ctx, "serving", typeServing, typeFailed)
	if err != nil {
		return fmt.Errorf("await successor: %w", err)
	}
	if m.Type == typeFailed {
		return fmt.Errorf("successor: %w: %s", ErrFailed, m.Reason)
	}
	return nil
}

// Commit tells the successor that the old process let go.
func (c *Conn) Commit() error { return c.write(message{Type: typeCommitted}, nil) }

// AwaitCommit waits for the old process's commit.
func (c *Conn) AwaitCommit(ctx context.Context) error {
	if _, err := c.expect(ctx, "commit", typeCommitted); err != nil {
		return fmt.Errorf("await commit: %w", err)
	}
	return nil
}

// expect reads one message that must be of one of the types; descriptors
// may ride only with an offer's batches.
func (c *Conn) expect(ctx context.Context, what string, types ...string) (message, error) {
	m, err := c.read(ctx)
	if err != nil {
		return message{}, fmt.Errorf("read %s: %w", what, err)
	}
	ok := false
	for _, t := range types {
		ok = ok || m.Type == t
	}
	if !ok {
		c.broken = fmt.Errorf("unexpected %q message where %s was due", m.Type, what)
		return message{}, c.broken
	}
	if m.Type != typeOffer && m.Type != typeFiles {
		if fds := c.takeFds(); len(fds) > 0 {
			closeFds(fds)
			c.broken = fmt.Errorf("%d descriptors arrived with a %q message", len(fds), m.Type)
			return message{}, c.broken
		}
	}
	return m, nil
}
