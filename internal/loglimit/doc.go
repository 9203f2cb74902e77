// Package loglimit bounds the log lines a client or a peer can cause: a
// Limiter per kind of line lets a few through each second and counts the
// rest, and the next line it lets through reports them as suppressed=N;
// Clip cuts a client-chosen string before it goes into a line. Metrics
// count every event, so a line held back loses only its detail.
//
// It is a leaf: it knows nothing of slog handlers, sockets or metrics, and
// lines the operator or the process causes (start-up, reload, drain) do not
// go through it.
package loglimit
