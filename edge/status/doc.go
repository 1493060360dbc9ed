// Package status is the gateway's local status endpoint, served on
// loopback: GET /healthz (liveness), GET /status (a JSON Report: backlog and
// oldest record per lane, drops, disk use, connection state, last PUBACK,
// and in "acks" the telemetry waiting for the cloud's acknowledgement)
// and GET /metrics (Prometheus text, from the hooks in metrics.go).
package status
