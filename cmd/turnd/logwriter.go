package main

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// logQueueLines is how many log lines may wait for stderr: about 1 MiB at
// info level. A burst of allocations fits; a reader that stopped does not.
const logQueueLines = 4096

// logWriter puts log lines between turnd and its stderr so that writing a
// line never blocks. stderr is a pipe to journald, the container runtime or
// a shell; if its reader stops reading, a plain write blocks once the pipe
// is full (64 KiB), and with it the goroutine that logged. The edge reads each
// listening socket on one goroutine and the handlers log allocation events
// on it, so
// one stuck log shipper would stall every request and every packet from the
// clients on that socket. Lines that do not fit are dropped and counted,
// and the count is logged once stderr drains.
type logWriter struct {
	out     io.Writer
	lines   chan []byte
	dropped atomic.Uint64
	log     atomic.Pointer[slog.Logger] // reports drops; set once the logger exists
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// newLogWriter starts the goroutine that writes to out; Close stops it.
func newLogWriter(out io.Writer, queue int) *logWriter {
	w := &logWriter{out: out, lines: make(chan []byte, queue), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Write queues one log line (slog writes each record with one call) and
// never blocks. It copies p: slog reuses its buffer.
func (w *logWriter) Write(p []byte) (int, error) {
	select {
	case w.lines <- append([]byte(nil), p...):
	default:
		w.dropped.Add(1)
	}
	return len(p), nil
}

// Dropped returns how many lines were dropped because stderr was behind.
func (w *logWriter) Dropped() uint64 { return w.dropped.Load() }

// collector exposes Dropped as turnd_log_lines_dropped_total.
func (w *logWriter) collector() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "turnd_log_lines_dropped_total",
		Help: "Log lines dropped because stderr was not being read fast enough.",
	}, func() float64 { return float64(w.Dropped()) })
}

// ReportDropsTo makes the writer log through log how many lines it dropped,
// once stderr has caught up again.
func (w *logWriter) ReportDropsTo(log *slog.Logger) { w.log.Store(log) }

func (w *logWriter) run() {
	defer close(w.done)
	var reported uint64
	for {
		select {
		case line := <-w.lines:
			w.write(line)
			reported = w.reportDrops(reported)
		case <-w.stop:
			for {
				select {
				case line := <-w.lines:
					w.write(line)
					reported = w.reportDrops(reported)
				default:
					return
				}
			}
		}
	}
}

// reportDrops logs the drop count if it changed since reported and the
// queue has drained (stderr is being read again), and returns what is now
// reported. The report itself is one more queued line.
func (w *logWriter) reportDrops(reported uint64) uint64 {
	n := w.dropped.Load()
	if n == reported || len(w.lines) > 0 {
		return reported
	}
	if log := w.log.Load(); log != nil {
		log.Warn("log lines dropped: stderr was not being read", "dropped_total", n)
	}
	return n
}

// write loses the line on an error (EPIPE when the reader has gone, see
// ignoreSIGPIPE): there is nowhere else to put it.
func (w *logWriter) write(line []byte) { _, _ = w.out.Write(line) }

// Close writes out the lines already queued, waiting at most timeout for a
// reader that may never come back. Lines written after Close are lost.
func (w *logWriter) Close(timeout time.Duration) {
	w.once.Do(func() { close(w.stop) })
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
}
