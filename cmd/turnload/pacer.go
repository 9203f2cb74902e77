package main

import "time"

// pacer is a token bucket: tokens accrue at rate per second up to burst,
// and each message sent spends one. Time is passed in (as an offset from
// the run's start) so tests need no clock.
type pacer struct {
	rate   float64 // tokens per second
	burst  float64 // most tokens held: caps the catch-up after a stall
	tokens float64
	last   time.Duration
}

// newPacer starts empty at time start, so the first message waits for its
// token like every other.
func newPacer(rate float64, burst time.Duration, start time.Duration) *pacer {
	return &pacer{rate: rate, burst: max(1, rate*burst.Seconds()), last: start}
}

// take returns how many messages may be sent at now, at most limit, and
// spends their tokens.
func (p *pacer) take(now time.Duration, limit int) int {
	if now > p.last {
		p.tokens = min(p.burst, p.tokens+p.rate*(now-p.last).Seconds())
		p.last = now
	}
	n := min(int(p.tokens), limit)
	if n <= 0 {
		return 0
	}
	p.tokens -= float64(n)
	return n
}

// wait is how long from now until the next token, at least floor: the
// sender sleeps that long rather than spin.
func (p *pacer) wait(floor time.Duration) time.Duration {
	need := 1 - p.tokens
	if need <= 0 {
		return floor
	}
	return max(floor, time.Duration(need/p.rate*float64(time.Second)))
}
