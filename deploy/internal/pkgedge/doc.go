// Package pkgedge builds the bowline-edge Debian package for the gateway's
// architectures: it cross-compiles edge/cmd/bowline-edge (static, CGO off)
// and packs it with nfpm together with the hardened systemd unit, the
// default config, the service user and the certificate directory from
// deploy/edge.
//
// nfpm is linked only into the packaging tool (deploy/cmd/package-edge),
// never into bowline-edge itself; a test checks the agent's dependency list.
package pkgedge
