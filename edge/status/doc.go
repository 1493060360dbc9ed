// Package status is the gateway's local status endpoint, served on
// loopback: GET /healthz (liveness), GET /status (a JSON wire.GatewayStatus: backlog and
// oldest record per lane, drops, disk use, connection state, last PUBACK,
// and in "acks" the telemetry waiting for the cloud's acknowledgement)
// and GET /metrics (Prometheus text, from Metrics, the outbox's and the
// forwarder's Observer, in metrics.go).
//
// It has no authentication, so it answers only requests whose Host is
// localhost, a loopback address, the address it was reached on, or a name
// in Config.Hosts (421 otherwise): a web page that rebinds its own domain
// to 127.0.0.1 cannot read it (host.go). The broker URL in /status is
// shown without its password and query (RedactURL).
package status
