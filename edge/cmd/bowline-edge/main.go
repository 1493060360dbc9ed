// Command bowline-edge is the bowl gateway agent: it reads the bowl MCU's
// frames, keeps them durable in a bbolt outbox and forwards them over MQTT.
// It must never link the AWS SDK (a test checks its dependency list).
package main

import "github.com/bowline-iot/bowline/internal/cli"

func main() { app().Main() }

// app is the command table (tests re-execute the test binary as the agent
// through it).
func app() cli.App {
	return cli.App{
		Name:    "bowline-edge",
		Summary: "the Bowline gateway agent",
		Commands: []cli.Command{
			{Name: "run", Summary: "run the gateway agent", Run: runCmd},
			{Name: "check-config", Summary: checkConfigSummary, Run: runCheckConfig},
			{Name: "status", Summary: statusSummary, Run: runStatus},
			{Name: "simulate", Summary: "simulated bowls that speak the firmware protocol", Run: runSimulate},
		},
	}
}
