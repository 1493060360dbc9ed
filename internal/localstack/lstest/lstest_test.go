package lstest_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// helperEnv marks the child runs of TestLazyStart.
const helperEnv = "BOWLINE_LSTEST_HELPER"

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB) }

// TestHelperPure is a pure unit test in a package whose TestMain calls
// lstest.Main: run alone, it must not start the stack.
func TestHelperPure(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestLazyStart")
	}
	if lstest.Started() {
		t.Error("the stack started for a test that never asked for it")
	}
}

// TestHelperNeedsStack asks for the stack.
func TestHelperNeedsStack(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestLazyStart")
	}
	lstest.Stack(t)
}

// helperRun runs this test binary on the tests run selects, with no
// emulators to be found (BOWLINE_ROOT is an empty folder) and CI=true.
func helperRun(t *testing.T, run string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := testkit.TestBinary("-test.run="+run, "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "CI=true", "BOWLINE_ROOT="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	err := testkit.RunChild(testkit.Context(t), t, "lstest helper", cmd)
	return testkit.ExitCode(err), out.String()
}

// A binary whose selected tests never ask for the stack passes without
// the emulators, even under CI=true; one that asks fails there, naming
// the missing stack.
func TestLazyStart(t *testing.T) {
	if code, out := helperRun(t, "^TestHelperPure$"); code != 0 || strings.Contains(out, "lstest: local stack unavailable") {
		t.Errorf("pure test without emulators: exit %d; want 0 and no start attempt\n%s", code, out)
	}
	if code, out := helperRun(t, "^TestHelperNeedsStack$"); code != 1 || !strings.Contains(out, "local stack unavailable (run ./scripts/setup)") {
		t.Errorf("test that needs the stack, without emulators, CI=true: exit %d; want 1 naming the missing stack\n%s", code, out)
	}
}

// Every ask returns the one stack of the binary.
func TestOneStackPerBinary(t *testing.T) {
	first := lstest.Stack(t)
	if second := lstest.Stack(t); second != first || !lstest.Started() {
		t.Errorf("Stack returned %p, then %p; want one stack, started", first, second)
	}
	if got := lstest.Names(t).Stack; got == "" || os.Getenv("BOWLINE_STACK") != got {
		t.Errorf("Names().Stack = %q, $BOWLINE_STACK = %q; want the same, set", got, os.Getenv("BOWLINE_STACK"))
	}
}
