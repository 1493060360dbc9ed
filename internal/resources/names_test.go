package resources

import "testing"

func TestNames(t *testing.T) {
	n, err := New("dev")
	if err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{
		n.EventsTable():        "dev-bowline-events",
		n.InboxTable():         "dev-bowline-inbox",
		n.DeadLettersTable():   "dev-bowline-dead_letters",
		n.AppTable():           "dev-bowline-app",
		n.AnchorsTable():       "dev-bowline-anchors",
		n.EventsQueue():        "dev-bowline-events.fifo",
		n.EventsDLQ():          "dev-bowline-events-dlq.fifo",
		n.RecordChangesQueue(): "dev-bowline-record-changes",
		n.TelemetryStream():    "dev-bowline-telemetry",
	} {
		if got != want {
			t.Errorf("name = %q; want %q", got, want)
		}
	}
}

func TestNewRejectsBadStack(t *testing.T) {
	for _, s := range []string{"", "Dev", "-x", "a_b", "x y"} {
		if _, err := New(s); err == nil {
			t.Errorf("New(%q) = nil error; want an error", s)
		}
	}
}
