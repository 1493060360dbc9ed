package testkit

import (
	"testing"
)

// panicWriter panics as testing's output writer does once a test and all
// its parents are done.
type panicWriter string

func (p panicWriter) Write([]byte) (int, error) { panic(string(p)) }

// A record logged after every test completed is dropped, not a panic that
// takes the test binary down (a library goroutine logging late, as paho's
// connection-lost handler did after PASS); any other panic still
// propagates.
func TestLoggerDropsWritesAfterTheTestCompleted(t *testing.T) {
	w := afterDone{panicWriter("Write called after TestX has completed")}
	if n, err := w.Write([]byte("late\n")); n != 5 || err != nil {
		t.Errorf("Write after completion = %d, %v; want 5, nil (dropped)", n, err)
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("Write on another panic recovered %v; want the panic \"boom\" to propagate", r)
		}
	}()
	_, _ = afterDone{panicWriter("boom")}.Write([]byte("x"))
}
