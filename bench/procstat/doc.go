// Package procstat reads another process's CPU time and memory from Linux's
// /proc, so a load generator or a benchmark can charge work to the process
// that did it.
//
// It knows nothing about TURN, about which process it is looking at, or
// about how a benchmark turns samples into figures: it only parses
// /proc/PID/stat, /proc/PID/status and /proc/PID/schedstat.
package procstat
