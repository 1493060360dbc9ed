package enginetest_test

import (
	"testing"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// TestMain starts fauxqs for the conformance suite (conformance_test.go);
// the double's own tests need no emulator.
func TestMain(m *testing.M) { lstest.Main(m, localstack.SQS) }
