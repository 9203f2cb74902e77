package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestStreamAgainstTurnd: stream mode holds its idle allocations, streams
// through a real turnd with nothing lost, says when the stream is steady,
// and reports the longest silence between echoes.
func TestStreamAgainstTurnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs turnd")
	}
	addr, _ := startTurnd(t)
	var out, errb bytes.Buffer
	args := []string{"stream", "--server", addr, "--clients", "5", "--rate", "200", "--duration", "2s", "--json"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("turnload %v: exit %d\n%s", args, code, errb.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	x := rep.Stream
	if rep.Setup.OK != 5 || x == nil {
		t.Fatalf("report %+v", rep)
	}
	t.Logf("stream %+v", *x)
	// A ticker drops the ticks a descheduled sender misses: a few fewer than 400 may go.
	if x.Sent < 300 || x.Sent > 400 || x.Received != x.Sent || x.LossPct != 0 || x.Duplicates != 0 || x.SendFailed != 0 {
		t.Errorf("sent %d, received %d (%d duplicates, %d send failures), loss %.2f%%: want every message back once",
			x.Sent, x.Received, x.Duplicates, x.SendFailed, x.LossPct)
	}
	if x.MaxGapMs <= 0 || x.MaxGapFromUnixNano == 0 || x.RTTMaxMs <= 0 {
		t.Errorf("no gap or rtt measured: %+v", *x)
	}
	if !strings.Contains(errb.String(), streamSteady) {
		t.Errorf("no %q line on stderr:\n%s", streamSteady, errb.String())
	}
}
