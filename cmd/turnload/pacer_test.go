package main

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	type step struct {
		at    time.Duration
		limit int
		want  int
	}
	tests := []struct {
		name  string
		rate  float64
		burst time.Duration
		steps []step
	}{
		{"starts empty", 1000, 10 * time.Millisecond, []step{{0, 100, 0}, {time.Millisecond, 100, 1}}},
		{"accrues at rate", 1000, time.Second, []step{{10 * time.Millisecond, 100, 10}, {25 * time.Millisecond, 100, 15}}},
		{"fractions carry over", 1500, time.Second, []step{{time.Millisecond, 100, 1}, {2 * time.Millisecond, 100, 2}}},
		{"limit leaves tokens", 1000, time.Second, []step{{10 * time.Millisecond, 4, 4}, {10 * time.Millisecond, 100, 6}}},
		{"burst caps a stall", 1000, 10 * time.Millisecond, []step{{time.Second, 1000, 10}, {time.Second + 2*time.Millisecond, 100, 2}}},
		{"time going back adds nothing", 1000, time.Second, []step{{10 * time.Millisecond, 100, 10}, {5 * time.Millisecond, 100, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer(tt.rate, tt.burst, 0)
			for i, s := range tt.steps {
				if got := p.take(s.at, s.limit); got != s.want {
					t.Errorf("step %d at %v: got %d, want %d", i, s.at, got, s.want)
				}
			}
		})
	}
}

// TestPacerLongRun checks that the count sent over a run matches
// rate x duration when the caller polls on an uneven schedule.
func TestPacerLongRun(t *testing.T) {
	p := newPacer(40000, 20*time.Millisecond, 0)
	total := 0
	for now := time.Duration(0); now <= 5*time.Second; now += time.Duration(700+now.Microseconds()%900) * time.Microsecond {
		total += p.take(now, 1<<30)
	}
	if total < 199_900 || total > 200_000 {
		t.Errorf("sent %d in 5 s at 40000/s", total)
	}
}

func TestPacerWait(t *testing.T) {
	p := newPacer(100, time.Second, 0)
	if got := p.wait(time.Millisecond); got != 10*time.Millisecond {
		t.Errorf("empty bucket: wait %v, want 10ms", got)
	}
	p.take(50*time.Millisecond, 0)
	if got := p.wait(time.Millisecond); got != time.Millisecond {
		t.Errorf("tokens ready: wait %v, want the floor", got)
	}
}
