// Command runner is `make bench`: it runs turnd and coturn's turnserver one
// after the other on this machine's loopback under identical load (coturn's
// turnutils_uclient and turnd's own turnload), and prints one table of
// throughput, loss, server CPU per relayed packet, memory and latency, with
// the ratio turnd/coturn for each figure. It writes the same results as
// JSON (bench/results/latest.json) for the docs and the chart.
//
// Every process it starts runs in its own process group and is stopped by
// PID; every wait and loop is bounded. It knows the servers only as
// command lines and PIDs: nothing about how either is built.
package main
