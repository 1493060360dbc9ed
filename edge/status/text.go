package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// WriteText prints r for a person (`bowline-edge status`): counts with
// units, ages as durations, bytes in KiB/MiB/GiB; now dates the ages of
// the absolute times in r.
func WriteText(w io.Writer, r wire.GatewayStatus, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "gateway %s (tenant %s), up %s\n", r.Gateway, r.Tenant, roundAge(r.Uptime))
	m := r.MQTT
	state := "DISCONNECTED"
	if m.Connected {
		state = "connected"
	}
	fmt.Fprintf(&b, "mqtt:      %s to %s; %d published, %d acknowledged, %d in flight, %d connects", state, m.Broker, m.Published, m.Acked, m.InFlight, m.Connects)
	if !m.LastPuback.IsZero() {
		fmt.Fprintf(&b, "; last PUBACK %s", ago(now, m.LastPuback))
	}
	if m.LastError != "" {
		fmt.Fprintf(&b, "; last error: %s", m.LastError)
	}
	b.WriteString("\n")
	for _, l := range []struct {
		name string
		lane wire.LaneStatus
	}{{"events", r.Lanes.Events}, {"telemetry", r.Lanes.Telemetry}} {
		fmt.Fprintf(&b, "%-10s %d waiting (%s)", l.name+":", l.lane.Backlog, Bytes(l.lane.Bytes))
		if l.lane.Backlog > 0 {
			fmt.Fprintf(&b, ", oldest %s old", roundAge(seconds(l.lane.OldestAgeSeconds)))
		}
		fmt.Fprintf(&b, ", %d dropped\n", l.lane.Dropped)
	}
	a := r.Acks
	if a.Wire != "" {
		fmt.Fprintf(&b, "acks:      wire %s; %d samples not acknowledged by the cloud", a.Wire, a.UnackedSamples)
		if a.UnackedSamples > 0 {
			fmt.Fprintf(&b, " (oldest %s old)", roundAge(seconds(a.OldestUnackedAgeSeconds)))
		}
		fmt.Fprintf(&b, ", %d of them sent", a.UnackedSentSamples)
		if a.UnackedSentSamples > 0 {
			fmt.Fprintf(&b, " (oldest sent %s ago)", roundAge(seconds(a.OldestUnackedSentAgeSeconds)))
		}
		last := "never"
		if !a.LastAck.IsZero() {
			last = ago(now, a.LastAck)
		}
		fmt.Fprintf(&b, "; last ack %s; %d acks applied (%d samples), %d for another outbox, %d undecodable\n", last, a.AcksApplied, a.AckedSamples, a.AcksIgnored, a.AcksBad)
	}
	d := r.Disk
	fsFree := "unknown"
	if d.FSFreeBytes >= 0 {
		fsFree = Bytes(d.FSFreeBytes)
	}
	fmt.Fprintf(&b, "disk:      outbox %s is %s (%s of it free pages); file system %s free; cap %s, in force %s",
		d.Path, Bytes(d.FileBytes), Bytes(d.FileFreeBytes), fsFree, Bytes(d.CapBytes), Bytes(d.EffectiveMaxBytes))
	if d.DiskLimited {
		b.WriteString(" (LOWERED: the disk is nearly full)")
	}
	b.WriteString("\n")
	if len(r.Bowls) == 0 {
		b.WriteString("link:      no bowl input\n")
	}
	for _, bw := range r.Bowls {
		state := "DISCONNECTED"
		if bw.Connected {
			state = "connected"
		}
		var name string
		switch {
		case bw.Input == "":
			name = "bowl " + bw.Device
		case bw.Device == "":
			name = "input " + bw.Input
		default:
			name = "bowl " + bw.Device + " on " + bw.Input
		}
		fmt.Fprintf(&b, "link:      %s %s", name, state)
		if !bw.LastSeen.IsZero() {
			fmt.Fprintf(&b, ", last frame %s", ago(now, bw.LastSeen))
		}
		if bw.LastError != "" {
			fmt.Fprintf(&b, "; last error: %s", bw.LastError)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Bytes formats n bytes with binary units: "512 B", "3.0 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for ; (v >= unit || v <= -unit) && i < 4; i++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// roundAge rounds d for reading: whole seconds, whole minutes past an hour.
func roundAge(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

func ago(now, t time.Time) string {
	if t.After(now) {
		return t.UTC().Format(time.RFC3339) + " (ahead of this machine's clock)"
	}
	return roundAge(now.Sub(t)) + " ago"
}
