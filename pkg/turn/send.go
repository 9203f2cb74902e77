package turn

import "github.com/turnd/turnd/internal/bindings"

// send drops a Send indication (RFC 8656 §11.2): the fast path relays every
// one it can, so what reaches the handler has no allocation or no
// permission, and "the Send indication is discarded". It is counted.
func (h *Handler) send(_ *bindings.Client) { h.events.Dropped(DropSend) }
