// Package deploytest checks turnd's deployment files: it renders the Helm
// chart with the real helm binary and decodes every object strictly into its
// Kubernetes API type, runs `helm lint --strict`, passes rendered configs to
// `turnd check-config` when $TURND_BIN names a built turnd, and checks the
// systemd unit with systemd-analyze.
//
// It is a module of its own so that turnd's go.mod never pulls in the
// Kubernetes libraries. It knows nothing about turnd's Go packages: turnd is
// only ever run as a binary.
package deploytest
