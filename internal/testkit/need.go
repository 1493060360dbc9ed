package testkit

import (
	"os"
	"testing"
)

// Need stops a test whose part is missing: err says what is missing (an
// emulator, Mosquitto, FUSE, chromium) and how to install it. Under
// CI=true, which ./scripts/test sets, the test fails, so the README's
// test command never passes by skipping; elsewhere it skips. A nil err
// does nothing.
func Need(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// Long marks a test too slow for `go test -short`: elsewhere -short skips
// it, saying why. Under CI=true it runs whatever the flags, so the suite
// never passes by skipping it.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip(why)
	}
}
