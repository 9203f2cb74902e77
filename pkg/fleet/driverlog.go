package fleet

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// SilenceDriver stops go-redis from writing its own lines to stderr (a
// failed dial every probe while Redis is down): the Client reports what
// matters through Options.OnChange, once per change. go-redis's logger is
// process-wide, so only a program's main calls this.
func SilenceDriver() { redis.SetLogger(discard{}) }

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}
