package main

import (
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// transcript is uclient 4.6.1's output for a short run against turnd.
const transcript = `0: : Total connect time is 21
0: : start_mclient: msz=200, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
1: : start_mclient: msz=200, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
2: : start_mclient: msz=200, tot_send_msgs=6329, tot_recv_msgs=6255, tot_send_bytes ~ 632900, tot_recv_bytes ~ 625500
3: : start_mclient: msz=200, tot_send_msgs=31275, tot_recv_msgs=31131, tot_send_bytes ~ 3127500, tot_recv_bytes ~ 3113100
8: : start_mclient: tot_send_msgs=200000, tot_recv_msgs=199000
8: : start_mclient: tot_send_bytes ~ 20000000, tot_recv_bytes ~ 19900000
8: : Total transmit time is 8
8: : Total lost packets 1000 (0.500000%), total send dropped 0 (0.000000%)
8: : Average round trip delay 8.679785 ms; min = 0 ms, max = 164 ms
8: : Average jitter 2.679870 ms; min = 0 ms, max = 112 ms
`

func TestUclientWatcher(t *testing.T) {
	// Each sample of the "server" reports one more second of CPU, so the
	// window's CPU tells which lines were sampled.
	calls := 0
	w := &uclientWatcher{sample: func() (procstat.Sample, error) {
		calls++
		return procstat.Sample{CPU: time.Duration(calls) * time.Second}, nil
	}}
	w.consume(strings.NewReader(transcript))
	res, err := w.result()
	if err != nil {
		t.Fatal(err)
	}
	// Samples: start of stream (1), two idle progress lines (2, 3), totals (4).
	if res.ServerCPU != time.Second {
		t.Errorf("server CPU %v, want 1s (from the last idle line to the totals)", res.ServerCPU)
	}
	if res.Sent != 200000 || res.Received != 199000 || res.LossPct != 0.5 || res.RTTAvgMs != 8.679785 || res.RTTMaxMs != 164 {
		t.Errorf("parsed %+v", res)
	}
}

func TestUclientWatcherNoTotals(t *testing.T) {
	w := &uclientWatcher{sample: func() (procstat.Sample, error) { return procstat.Sample{}, nil }}
	w.consume(strings.NewReader("0: : error 437 ()\n0: : trying allocate again 437...\n2: : error 508 ()\n"))
	if _, err := w.result(); err == nil || !strings.Contains(err.Error(), "508") {
		t.Errorf("err = %v, want the last lines quoted", err)
	}
}
