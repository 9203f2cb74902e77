package fleet_test

import (
	"context"
	"errors"
	"log/slog"

	"github.com/turnd/turnd/pkg/fleet"
)

// The Allocate path of a server with a fleet: one Admit, a fallback rule
// when Redis is down, and one Release for every count held, whether the
// allocation ends or is never made.
func Example() {
	f, err := fleet.Open(context.Background(), fleet.Options{
		URL:      "rediss://turnd:secret@redis.example:6380",
		Node:     "turn-1",
		OnChange: func(up bool, err error) { slog.Info("fleet", "up", up, "err", err) },
	})
	if err != nil {
		return // bad options; Redis being down is not an error
	}
	defer f.Close()

	allocate := func(ctx context.Context, user string) error {
		err := f.Admit(ctx, user, 2, 0) // limits.user_allocations: 2
		switch {
		case errors.Is(err, fleet.ErrUserQuota), errors.Is(err, fleet.ErrTotalQuota):
			return err // 486
		case errors.Is(err, fleet.ErrUnavailable):
			// The fallback rule (default: local limits only) let it in,
			// so the fleet counts it once Redis is back.
			f.Hold(user)
		case err != nil:
			return err // the caller's context ended
		}
		if !makeAllocation(user) {
			f.Release(user) // never made: give the count back
			return errors.New("allocation failed")
		}
		return nil // and f.Release(user) when it ends
	}
	_ = allocate(context.Background(), "alice")
}

func makeAllocation(string) bool { return true }
