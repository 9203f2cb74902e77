package fleet

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

// beatNow runs one beat at once (the heartbeat would within Lease/3).
func beatNow(t *testing.T, c *Client) {
	t.Helper()
	if err := c.beat(ctxT(t)); err != nil {
		t.Fatalf("%s: beat: %v", c.Node(), err)
	}
}

// wantOthers fails the test unless c's OthersRate is want for each user.
func wantOthers(t *testing.T, c *Client, want map[string]uint64) {
	t.Helper()
	for u, w := range want {
		if got := c.OthersRate(u); got != w {
			t.Errorf("%s: OthersRate(%s) = %d, want %d", c.Node(), u, got, w)
		}
	}
}

// TestRatesSummedOverOtherLiveNodes: each node reads back the sum of the
// other live nodes' rates for the users it publishes, never its own, and
// only after a beat; a node whose lease lapsed counts no more, and a node
// that left takes its rates with it.
func TestRatesSummedOverOtherLiveNodes(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second})
	c := r.open(Options{Node: "c", Lease: 10 * time.Second})
	hung := r.open(Options{Node: "hung", Clock: draintest.NewFakeClock(time.Now())}) // never beats again
	admin := r.admin()

	a.PublishRates(map[string]uint64{"alice": 1000, "bob": 0})
	b.PublishRates(map[string]uint64{"alice": 300, "carol": 5})
	c.PublishRates(map[string]uint64{"alice": 20, "bob": 7})
	hung.PublishRates(map[string]uint64{"alice": 4000})
	wantOthers(t, a, map[string]uint64{"alice": 0, "bob": 0}) // nothing read before a beat
	for _, n := range []*Client{a, b, c, hung} {
		beatNow(t, n)
	}
	beatNow(t, a)
	beatNow(t, b)
	wantOthers(t, a, map[string]uint64{"alice": 4320, "bob": 7, "carol": 0}) // carol: a does not publish her
	wantOthers(t, b, map[string]uint64{"alice": 5020, "carol": 0})

	h, err := admin.HGetAll(ctxT(t), "t:rates:a").Result()
	if err != nil || len(h) != 1 || h["alice"] != "1000" {
		t.Errorf("a's rates hash = %v (%v), want only alice at 1000 (zero rates are not written)", h, err)
	}
	if ttl := admin.PTTL(ctxT(t), "t:rates:a").Val(); ttl <= 0 || ttl > 10*time.Second {
		t.Errorf("a's rates hash expires in %v, want within its lease", ttl)
	}

	// The exchange alone, without the renew that prunes the live set, and
	// hung's hash kept past its lease: the live filter alone must drop it.
	if err := admin.Persist(ctxT(t), "t:rates:hung").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*testLease, "hung's lease passes", func() bool {
		if err := a.exchangeRates(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		return a.OthersRate("alice") == 320
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := admin.Exists(ctxT(t), "t:rates:c").Val(); n != 0 {
		t.Error("c's rates hash kept after it left the fleet")
	}
	beatNow(t, a)
	wantOthers(t, a, map[string]uint64{"alice": 300, "bob": 0})

	b.PublishRates(map[string]uint64{})
	beatNow(t, b)
	beatNow(t, a)
	wantOthers(t, a, map[string]uint64{"alice": 0})
	if n := admin.Exists(ctxT(t), "t:rates:b").Val(); n != 0 {
		t.Error("b's rates hash kept after it published none")
	}
}

// TestOthersRateZeroWhileDown: with Redis gone the sums read before are
// not trusted: every user gets its whole limit back on this node (the
// local fallback), and the sums return with the next beat after Redis.
func TestOthersRateZeroWhileDown(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, Clock: draintest.NewFakeClock(time.Now())})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second, Clock: draintest.NewFakeClock(time.Now())})
	a.PublishRates(map[string]uint64{"alice": 1})
	b.PublishRates(map[string]uint64{"alice": 500})
	beatNow(t, b)
	beatNow(t, a)
	wantOthers(t, a, map[string]uint64{"alice": 500})

	r.stop()
	if err := a.beat(ctxT(t)); err == nil {
		t.Fatal("a beat without Redis succeeded")
	}
	wantOthers(t, a, map[string]uint64{"alice": 0})
	r.start()
	// A pooled connection that died with Redis fails one call: the
	// heartbeat probes again, as this does.
	eventually(t, 2*time.Second, "a's probe succeeds", func() bool { return a.probe() == nil })
	wantOthers(t, a, map[string]uint64{"alice": 0}) // Redis lost b's rates with its restart
	eventually(t, 2*time.Second, "b beats again", func() bool { return b.beat(ctxT(t)) == nil || b.probe() == nil })
	beatNow(t, a)
	wantOthers(t, a, map[string]uint64{"alice": 500})
}

// roundTrips counts the commands and pipelines a client sends.
type roundTrips struct{ n int }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n++
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n++
		return next(ctx, cmds)
	}
}

// TestRatesExchangeIsOneRoundTrip: writing this node's rates and reading
// the others' is one round trip, however many nodes and users; a node
// that never published rates spends none.
func TestRatesExchangeIsOneRoundTrip(t *testing.T) {
	r := startRedis(t)
	fake := func() Options {
		return Options{Lease: 10 * time.Second, Clock: draintest.NewFakeClock(time.Now())}
	}
	rates := map[string]uint64{}
	for i := range 2500 { // more than one chunk of the script's unpack
		rates["user"+strconv.Itoa(i)] = uint64(i)
	}
	for i := range 5 {
		o := fake()
		o.Node = fmt.Sprintf("n%d", i)
		n := r.open(o)
		n.PublishRates(rates)
		beatNow(t, n)
	}
	o := fake()
	o.Node = "me"
	me := r.open(o)
	var h roundTrips
	me.rdb.AddHook(&h)
	if err := me.exchangeRates(ctxT(t)); err != nil || h.n != 0 {
		t.Fatalf("exchange with nothing published: %d round trips (%v), want none", h.n, err)
	}
	me.PublishRates(rates)
	if err := me.exchangeRates(ctxT(t)); err != nil { // loads the script: EVALSHA, then EVAL
		t.Fatal(err)
	}
	h.n = 0
	if err := me.exchangeRates(ctxT(t)); err != nil || h.n != 1 {
		t.Fatalf("exchange: %d round trips (%v), want 1", h.n, err)
	}
	wantOthers(t, me, map[string]uint64{"user0": 0, "user7": 35, "user2499": 5 * 2499})
}
