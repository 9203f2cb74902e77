package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// env is what every scenario needs.
type env struct {
	turnd    string // for turnd upgrade
	coturn   string
	turnload string
	uclient  string
	peer     *process // turnutils_peer, uclient's echo
	peerBin  string
	peerPort int
	opts     serverOpts // given to every server started
	log      io.Writer  // progress
	toolErr  io.Writer  // the tools' stderr
	// ownPIDs are processes a scenario started for itself (fleet's
	// redis-server): their CPU is not other work on the machine.
	ownPIDs []int
}

// scenario runs one load against one server and returns its row (without
// peak RSS, which the caller reads before stopping the server).
type scenario struct {
	name    string
	command string // as documented; SERVER and PEER stand for the ports
	run     func(ctx context.Context, e *env, s *server) (Row, error)
	// attempts is how many fresh servers a failing scenario gets (0 or 1:
	// one; never more than maxAttempts). uclient gets two: now and then it
	// makes its allocations at full speed and gives up at the first error
	// (over UDP that can be its own stale probe allocation on a reused local
	// port: 437). A second fresh server tells a flaky run from a failing
	// server; the row's notes keep the failure either way.
	attempts int
	// cpuSensitive rows are measured again when other work disturbed them.
	cpuSensitive bool
	// only names the one server kind the scenario runs on ("": every
	// one); the others' rows carry skip as their note.
	only, skip string
	// replacesServer scenarios end the server process they were given (a
	// hand-over to a successor they stop themselves): its exit is no error.
	replacesServer bool
	// rows, if set, runs the whole scenario on servers it starts itself
	// (in its own topology) and returns their rows; run is unused then.
	rows func(ctx context.Context, e *env, dir string) []Row
}

// uclientLoad is the load of every uclient scenario: the one coturn's
// baseline used at about 40 k messages/s each way (200 clients, 1000
// messages of 100 bytes each, 2 ms apart). turnload's client count matches.
func uclientLoad() []string { return []string{"-m", "200", "-n", "1000", "-l", "100", "-z", "2"} }

// uclientOverload is uclientLoad with four times the messages per client:
// more than these 2 CPUs can carry with uclient and its peer on them too,
// so something must give. Over TCP the client can be slowed down (TCP flow
// control) where nothing may be lost; past the server the relay is UDP,
// and a server that takes in more than it passes on loses datagrams.
func uclientOverload() []string { return []string{"-m", "200", "-n", "4000", "-l", "100", "-z", "2"} }

const (
	loadClients  = "200"
	rate40k      = 40000
	repeats      = 3 // runs of relay-40k and alloc-burst; the median is kept
	duration40k  = 10 * time.Second
	stepDuration = 4 * time.Second
	maxStepLoss  = 1.0 // percent
	keptUpShare  = 0.97
	burstClients = "10000"
	idleClients  = "5000"
	idleHold     = 10 * time.Second
)

// saturationRates is the ramp, messages/s each way; it stops at the first
// rate that fails twice.
func saturationRates() []float64 {
	return []float64{10000, 20000, 30000, 40000, 50000, 60000, 70000, 80000, 90000, 100000, 120000, 140000, 160000, 200000}
}

func scenarios() []scenario {
	return []scenario{
		uclientScenario("udp-channels", "UDP, ChannelData", uclientLoad()),
		uclientScenario("udp-send-indications", "UDP, Send/Data indications", uclientLoad(), "-s"),
		uclientScenario("tcp-channels", "TCP control and ChannelData over TCP", uclientLoad(), "-t"),
		uclientScenario("tcp-overload", "as tcp-channels, 4000 messages per client: more than the machine carries", uclientOverload(), "-t"),
		{name: "relay-40k", cpuSensitive: true, run: relay40k,
			command: fmt.Sprintf("turnload relay --clients %s --rate %d --duration %v   # x%d, median; after a 1 s warm-up", loadClients, rate40k, duration40k, repeats)},
		{name: "saturation", cpuSensitive: true, run: saturation,
			command: fmt.Sprintf("turnload relay --clients %s --rate R --duration %v   # R = 10k, 20k, ... until a step fails twice", loadClients, stepDuration)},
		{name: "alloc-burst", cpuSensitive: true, run: allocBurst,
			command: fmt.Sprintf("turnload alloc --clients %s --concurrency 100   # x%d, median", burstClients, repeats)},
		// Memory does not depend on how busy the CPUs are: no re-runs.
		{name: "idle-rss", run: idleRSS,
			command: fmt.Sprintf("turnload idle --clients %s --concurrency 100 --duration %v", idleClients, idleHold)},
		handoverScenario(),
		netnsScenario(),
		fleetScenario(),
	}
}

func uclientScenario(name, what string, load []string, flags ...string) scenario {
	args := append(append([]string{}, flags...), "-u", benchUser, "-w", benchPass, "-e", "127.0.0.1", "-r", "PEER", "-X")
	args = append(append(args, load...), "-p", "SERVER", "127.0.0.1")
	return scenario{
		name:         name,
		attempts:     2,
		cpuSensitive: true,
		command:      "turnutils_uclient " + strings.Join(args, " ") + "   # " + what,
		run: func(ctx context.Context, e *env, s *server) (Row, error) {
			argv := []string{e.uclient}
			for _, a := range args {
				switch a {
				case "PEER":
					a = strconv.Itoa(e.peerPort)
				case "SERVER":
					a = strconv.Itoa(s.port)
				}
				argv = append(argv, a)
			}
			w := &uclientWatcher{sample: s.sample}
			cpu, runErr := runTool(ctx, 4*time.Minute, e.toolErr, w.consume, argv...)
			res, err := w.result()
			if err != nil {
				return Row{}, fmt.Errorf("%w (%w)", err, runErr)
			}
			row := Row{
				LossPct: res.LossPct, RTTAvgMs: res.RTTAvgMs, RTTMaxMs: res.RTTMaxMs,
				ServerCPUSeconds: res.ServerCPU.Seconds(), RelayedPackets: res.Sent + res.Received,
				ClientCPUSeconds: cpu.Seconds(),
			}
			if res.WindowSeconds > 0 {
				row.OfferedRate = float64(res.Sent) / res.WindowSeconds
				row.DeliveredRate = float64(res.Received) / res.WindowSeconds
			}
			if row.RelayedPackets > 0 {
				row.CPUPerPacketUS = row.ServerCPUSeconds * 1e6 / float64(row.RelayedPackets)
			}
			if runErr != nil {
				row.Error = runErr.Error()
			}
			return row, nil
		},
	}
}

// relayRow turns a turnload relay report into a row.
func relayRow(rep *loadReport) Row {
	r := rep.Relay
	return Row{
		OfferedRate: r.OfferedRate, DeliveredRate: r.DeliveredRate, LossPct: r.LossPct,
		ServerCPUSeconds: rep.Process.CPUSeconds, RelayedPackets: int64(r.RelayedPackets),
		CPUPerPacketUS: rep.Process.CPUPerPacketUS, RTTAvgMs: r.RTTAvgMs, RTTMaxMs: r.RTTMaxMs,
		ClientCPUSeconds: rep.Self.CPUSeconds,
	}
}

func relayArgs(rate float64, d time.Duration) []string {
	return []string{"relay", "--clients", loadClients, "--rate", strconv.FormatFloat(rate, 'f', 0, 64), "--duration", d.String()}
}

// warmUp runs a short relay load so neither server is measured cold.
func warmUp(ctx context.Context, e *env, s *server) error {
	_, err := runTurnload(ctx, e, s, time.Second, relayArgs(10000, time.Second)...)
	return err
}

// relay40k is the target's operating point, repeated; the row is the run
// with the median server CPU per packet.
func relay40k(ctx context.Context, e *env, s *server) (Row, error) {
	if err := warmUp(ctx, e, s); err != nil {
		return Row{}, err
	}
	var rows []Row
	for range repeats {
		rep, err := runTurnload(ctx, e, s, duration40k, relayArgs(rate40k, duration40k)...)
		if err != nil {
			return Row{}, err
		}
		rows = append(rows, relayRow(rep))
	}
	return medianRow(rows, func(r Row) float64 { return r.CPUPerPacketUS }), nil
}

// medianRow returns the row with the median key among repeated runs, with
// every run's key kept as its samples.
func medianRow(rows []Row, key func(Row) float64) Row {
	slices.SortFunc(rows, func(a, b Row) int { return cmpFloat(key(a), key(b)) })
	row := rows[len(rows)/2]
	for _, r := range rows {
		row.Samples = append(row.Samples, key(r))
	}
	return row
}

// saturation ramps the offered rate until a step loses more than 1 % (or
// the generator cannot send it) twice; the row is the best step that held.
func saturation(ctx context.Context, e *env, s *server) (Row, error) {
	if err := warmUp(ctx, e, s); err != nil {
		return Row{}, err
	}
	var row Row
	var best *loadReport
	for _, rate := range saturationRates() {
		var st Step
		var rep *loadReport
		for try := 1; try <= 2; try++ {
			var err error
			if rep, err = runTurnload(ctx, e, s, stepDuration, relayArgs(rate, stepDuration)...); err != nil {
				return row, err
			}
			r := rep.Relay
			st = Step{OfferedRate: rate, SentRate: r.SentRate, DeliveredRate: r.DeliveredRate, LossPct: r.LossPct,
				ServerCPUSeconds: rep.Process.CPUSeconds, CPUPerPacketUS: rep.Process.CPUPerPacketUS,
				ClientPerPacketUS: rep.Self.CPUPerPacketUS, RTTAvgMs: r.RTTAvgMs, RTTMaxMs: r.RTTMaxMs, Tries: try}
			st.OK = r.LossPct <= maxStepLoss && r.SentRate >= keptUpShare*rate
			fmt.Fprintf(e.log, "bench:   %s %6.0f/s: delivered %6.0f/s, loss %6.2f%%, server %5.2f µs/pkt, turnload %5.2f µs/pkt\n",
				s.kind.name, rate, st.DeliveredRate, st.LossPct, st.CPUPerPacketUS, st.ClientPerPacketUS)
			if st.OK {
				break
			}
		}
		row.Steps = append(row.Steps, st)
		if !st.OK {
			break
		}
		if best == nil || rep.Relay.DeliveredRate > best.Relay.DeliveredRate {
			best = rep
		}
	}
	if best == nil {
		return row, fmt.Errorf("no step held at %.0f/s", saturationRates()[0])
	}
	steps := row.Steps
	row = relayRow(best)
	row.Steps = steps
	row.SaturationRate = best.Relay.DeliveredRate
	return row, nil
}

// allocBurst is repeated (each burst lasts only seconds); the row is the
// burst with the median rate.
func allocBurst(ctx context.Context, e *env, s *server) (Row, error) {
	var rows []Row
	for range repeats {
		rep, err := runTurnload(ctx, e, s, 0, "alloc", "--clients", burstClients, "--concurrency", "100")
		if err != nil {
			return Row{}, err
		}
		rows = append(rows, Row{
			ServerCPUSeconds: rep.Process.CPUSeconds, ClientCPUSeconds: rep.Self.CPUSeconds,
			AllocPerSec: rep.Alloc.PerSecond, CPUPerAllocUS: rep.Alloc.ServerCPUPerUS,
			FailedAllocs: rep.Setup.Failed,
		})
	}
	return medianRow(rows, func(r Row) float64 { return r.AllocPerSec }), nil
}

func idleRSS(ctx context.Context, e *env, s *server) (Row, error) {
	rep, err := runTurnload(ctx, e, s, idleHold, "idle", "--clients", idleClients, "--duration", idleHold.String(), "--concurrency", "100")
	if err != nil {
		return Row{}, err
	}
	return Row{
		ServerCPUSeconds: rep.Process.CPUSeconds, ClientCPUSeconds: rep.Self.CPUSeconds,
		IdleAllocs: rep.Idle.Held, RSSPerAllocKB: rep.Idle.RSSPerAllocKB, FailedAllocs: rep.Setup.Failed,
	}, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
