package engine_test

import (
	"os"
	"testing"

	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A re-executed emitter process of TestManyProcessesOneTenant: the
		// parent's stack is inherited through the environment.
		os.Exit(runEmitterChild())
	}
	lstest.Main(m, localstack.DynamoDB)
}
