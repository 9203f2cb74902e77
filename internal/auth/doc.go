// Package auth holds what authenticates a TURN request: it turns usernames
// into long-term credential keys, for static users (coturn's lt-cred-mech
// with user=name:pass) and TURN REST API credentials (coturn's use-auth-secret
// with one or more static-auth-secret), and it issues and checks the
// stateless nonces of RFC 8489 §9.2 (a time and a MAC under a secret that a
// successor process can take over).
//
// A Store is an immutable snapshot built from configuration; a reload builds a
// new one. The package is pure: it knows nothing about pion's server, sockets,
// HTTP or Prometheus. It only computes keys; comparing them against a
// message's MESSAGE-INTEGRITY is the caller's job.
package auth
