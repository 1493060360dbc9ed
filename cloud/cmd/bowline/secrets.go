package main

import (
	neturl "net/url"
	"os"
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
