// Package command implements the engine's operator commands for the bowline
// binary: `bowline emit`, `bowline verify-chain` and `bowline catalog`. Each
// takes its arguments and an output writer, so the main stays a table of
// names and the commands are tested without building the binary.
//
// AWS configuration comes from the standard environment (AWS_ENDPOINT_URL_*
// for the local stack, AWS_REGION) and resource names from BOWLINE_STACK.
package command
