// Command bowline is the cloud side of Bowline: local development stack,
// provisioning, ingestion, relay, worker, HTTP API and operator tools.
// Each subcommand lives in its own file; logic lives in packages under cloud/
// and engine/.
package main

import (
	"os"
	"path/filepath"

	"github.com/bowline-iot/bowline/internal/cli"
)

func main() {
	// In the consumers' Lambda package the binary is named bootstrap and
	// started without arguments (deploy/cloudformation, ConsumerFunction
	// and IngestFunction): it runs BOWLINE_LAMBDA_COMMAND, consume when
	// unset.
	if filepath.Base(os.Args[0]) == "bootstrap" && len(os.Args) == 1 {
		os.Args = append(os.Args, lambdaCommand(os.Getenv("BOWLINE_LAMBDA_COMMAND")))
	}
	cli.App{
		Name:    "bowline",
		Summary: "the Bowline cloud: ingest, relay, worker, API and operator tools",
		Commands: []cli.Command{
			{Name: "dev", Summary: "run the whole system locally (emulators, provisioning, services)", Run: runDev},
			{Name: "provision", Summary: "create every table, stream and queue, idempotently", Run: runProvision},
			{Name: "ingest", Summary: "Kinesis events -> Emit (the events consumer, Lambda's event source stand-in)", Run: runIngest},
			{Name: "rules", Summary: "MQTT -> Kinesis (the AWS IoT topic rules stand-in)", Run: runRules},
			{Name: "relay", Summary: "DynamoDB Streams -> SQS (the EventBridge Pipe stand-in)", Run: runRelay},
			{Name: "consume", Summary: "Kinesis telemetry -> the telemetry consumer (Lambda's event source stand-in)", Run: runConsume},
			{Name: "iot-endpoint", Summary: "HTTPS Publish -> MQTT (the AWS IoT data plane stand-in the consumer's acks go through)", Run: runIoTEndpoint},
			{Name: "worker", Summary: "run DURABLE subscriptions from the events queue", Run: runWorker},
			{Name: "api", Summary: "HTTP API: orders, payment webhooks, reconcile, the web console", Run: runAPI},
			{Name: "emit", Summary: "emit one event through the engine", Run: runEmit},
			{Name: "verify-chain", Summary: "verify tenants' hash chains", Run: runVerifyChain},
			{Name: "anchor", Summary: anchorSummary, Run: runAnchor},
			{Name: "completeness", Summary: completenessSummary, Run: runCompleteness},
			{Name: "dead-letters", Summary: "list dead letters; replay ingest's (dead-letters replay)", Run: runDeadLetters},
			{Name: "rule-errors", Summary: "put the topic rules' failed messages back into their streams (rule-errors replay)", Run: runRuleErrors},
			{Name: "redrive", Summary: "move dead-lettered events back to the events queue", Run: runRedrive},
			{Name: "order", Summary: orderSummary, Run: runOrder},
			{Name: "catalog", Summary: "print the event catalog, or check the contract", Run: runCatalog},
			{Name: "devices", Summary: "manage the device registry (devices register)", Run: runDevices},
		},
	}.Main()
}

// lambdaCommand is the subcommand a Lambda function runs: ingest or
// consume (the default).
func lambdaCommand(env string) string {
	if env == "ingest" {
		return "ingest"
	}
	return "consume"
}
