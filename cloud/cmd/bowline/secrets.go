package main

import (
	"fmt"
	neturl "net/url"
	"os"
	"strings"

	"github.com/bowline-iot/bowline/internal/cli"
)

// secretFromEnv sets *v to $name when the flag left it empty. Secret flags
// default to "" and are filled here, after parsing, so that --help and a
// usage error never print a secret from the environment.
func secretFromEnv(v *string, name string) {
	if *v == "" {
		*v = os.Getenv(name)
	}
}

// redactURL is u without a password, for logs.
func redactURL(u string) string {
	p, err := neturl.Parse(u)
	if err != nil {
		return "(unparsable url, not shown)"
	}
	return p.Redacted()
}

// keyIsAPath refuses a private key given as PEM text on the command line,
// where ps and the shell's history show it to anyone on the host: --key
// takes a file, the environment (BOWLINE_MQTT_KEY) may hold the text.
// The error never repeats the value.
func keyIsAPath(flagValue string) error {
	if strings.Contains(flagValue, "-----BEGIN") {
		return fmt.Errorf("%w: --key: got PEM text (%d bytes, not shown); give the path of the key file, or put the key in BOWLINE_MQTT_KEY", cli.ErrUsage, len(flagValue))
	}
	return nil
}
