package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// asMainEnv makes this test binary run main() instead of the tests. The
// process tests exec the test binary itself as `bowline` (bowlineBin), so
// they test exactly the code under test without a separate go build.
const asMainEnv = "BOWLINE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	// Every child process started from here on (the bowline processes the
	// tests exec with os.Environ) runs as bowline.
	os.Setenv(asMainEnv, "1")
	lstest.Main(m, localstack.DynamoDB, localstack.SQS)
}

// bowlineBin is the path of a `bowline` executable: this test binary,
// which runs main() in every child (asMainEnv).
func bowlineBin(t *testing.T) string {
	t.Helper()
	return testkit.TestBinary().Path
}

// freshStack provisions tables and queues under a new prefix, so that a
// test's relay, queue and dead letters are its own: a worker stopped by an
// earlier run (go test -count=N) may still hold a message of the shared
// queue invisible for the visibility timeout.
func freshStack(t *testing.T) resources.Names {
	t.Helper()
	names, err := resources.New("p" + randHex(4))
	if err != nil {
		t.Fatal(err)
	}
	_, err = provision.Provision(t.Context(), lstest.AWSConfig(t), names, provision.Options{Parts: []provision.Part{provision.Tables, provision.Queues}})
	if err != nil {
		t.Fatalf("provision %s: %v", names.Stack, err)
	}
	return names
}

// randHex is n random bytes in hex, for unique names.
func randHex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b)
}

// runBinary runs bin with args in env to the end, logs what it printed,
// and returns its stdout and how it exited (testkit.RunChild).
func runBinary(ctx context.Context, t *testing.T, bin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := testkit.RunChild(ctx, t, "bowline "+args[0], cmd)
	t.Logf("bowline %s: %s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String(), err
}
