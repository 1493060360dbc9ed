// Package config reads the gateway's JSON config file and its flags into
// an agent.Config. Flags override the file; every option is both a JSON
// field and a flag, and an error names the field and the problem.
package config
