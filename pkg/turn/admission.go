package turn

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/pkg/allocation"
)

// Admission is a say on an Allocate beyond the table's own quotas (a
// fleet's, kept elsewhere), asked once those passed. Admit may wait on the
// network, so the handler asks it off the reader of the client's socket,
// which meanwhile relays other clients' data. Every allocation the table
// holds while an Admission is set holds one count of it: admitted, or
// counted with Hold; Ended gives it back.
type Admission interface {
	// Admit counts one more allocation of user, or refuses it: an error
	// wrapping ErrAdmissionQuota or ErrAdmissionUnavailable (486).
	Admit(ctx context.Context, user string) error
	// Busy decides without asking, as when its store cannot answer: too
	// many Allocates wait for Admit already. nil admits (and counts);
	// an error refuses, as Admit's do.
	Busy(user string) error
	// Hold counts an allocation of user admitted without asking.
	Hold(user string)
	// Release gives back one count of user's.
	Release(user string)
}

// maxAsking bounds the Allocates waiting for Admission.Admit at once; past
// it Admission.Busy decides, rather than a queue behind a slow store.
const maxAsking = 256

// asking is the Allocates waiting for Admission.Admit, by 5-tuple and
// transaction: a retransmission of one is dropped, since the first's
// answer answers it.
type asking struct {
	mu     sync.Mutex
	now    map[askKey]struct{}
	paused bool
	idle   chan struct{} // closed when now empties while paused; nil otherwise
}

type askKey struct {
	tuple netaddr.FiveTuple
	tx    [stun.TransactionIDSize]byte
}

func (a *asking) has(k askKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.now[k]
	return ok
}

// begin records k as asked, unless paused or past maxAsking.
func (a *asking) begin(k askKey) (paused, full bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.paused || len(a.now) >= maxAsking {
		return a.paused, !a.paused
	}
	if a.now == nil {
		a.now = make(map[askKey]struct{})
	}
	a.now[k] = struct{}{}
	return false, false
}

func (a *asking) end(k askKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.now, k)
	if len(a.now) == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// PauseAdmissions makes later Allocates count with Hold instead of asking
// the Admission, and waits for those asking to be answered: a hand-over's
// freeze and a close must not race an allocation made behind their back.
// ctx bounds the wait; ResumeAdmissions undoes it.
func (h *Handler) PauseAdmissions(ctx context.Context) error {
	a := &h.asking
	a.mu.Lock()
	a.paused = true
	if len(a.now) == 0 {
		a.mu.Unlock()
		return nil
	}
	if a.idle == nil {
		a.idle = make(chan struct{})
	}
	idle := a.idle
	a.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ResumeAdmissions undoes PauseAdmissions.
func (h *Handler) ResumeAdmissions() {
	h.asking.mu.Lock()
	defer h.asking.mu.Unlock()
	h.asking.paused = false
}

// admitted goes on with an Allocate the table admitted: at once without an
// Admission, else once it said yes, on a goroutine of its own.
func (h *Handler) admitted(r *Request, ticket allocation.Ticket, w bindings.Want, fams familyAsk, giveBack func()) {
	if h.admission == nil {
		h.open(r, ticket, w, fams, giveBack)
		return
	}
	k := askKey{r.From.Tuple, r.Msg.TransactionID}
	switch paused, full := h.asking.begin(k); {
	case paused: // a freeze or a close: counted, decided by the table alone
		h.admission.Hold(r.User)
		h.decided(r, nil, ticket, w, fams, giveBack)
		return
	case full:
		h.decided(r, h.admission.Busy(r.User), ticket, w, fams, giveBack)
		return
	}
	r = r.clone()
	go func() {
		defer h.asking.end(k)
		h.decided(r, h.admission.Admit(context.Background(), r.User), ticket, w, fams, giveBack)
	}()
}

// decided goes on with an Allocate the Admission answered err to.
func (h *Handler) decided(r *Request, err error, ticket allocation.Ticket, w bindings.Want, fams familyAsk, giveBack func()) {
	if err != nil {
		ticket.Cancel()
		giveBack()
		reason := RefusedFleetQuota
		if errors.Is(err, ErrAdmissionUnavailable) {
			reason = RefusedFleetUnavailable
		}
		h.events.Refused(stun.MethodAllocate.String(), reason, r.User, r.From.Tuple.Client)
		h.fail(r, stun.CodeAllocQuotaReached)
		return
	}
	if !h.open(r, ticket, w, fams, giveBack) {
		h.admission.Release(r.User)
	}
}

// asked reports whether r retransmits an Allocate still waiting for the
// Admission.
func (h *Handler) asked(r *Request) bool {
	return h.admission != nil && h.asking.has(askKey{r.From.Tuple, r.Msg.TransactionID})
}

// clone copies r with what it points into, for a goroutine that goes on
// with the request after Serve returned: the message is decoded over the
// reader's buffer.
func (r *Request) clone() *Request {
	c := *r
	c.Msg = &stun.Message{Raw: bytes.Clone(r.Msg.Raw)}
	_ = c.Msg.Decode() // it decoded once already
	from := *r.From
	c.From = &from
	return &c
}
