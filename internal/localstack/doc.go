// Package localstack starts Bowline's local AWS stack: real wire-protocol
// emulators run as child processes on free loopback ports, so the same
// aws-sdk-go-v2 code that talks to AWS talks to them, with only the
// AWS_ENDPOINT_URL_* variables changed.
//
//	DynamoDB + Streams  AWS's DynamoDB Local (Java 17+), jar in deploy/local/dynamodb-local
//	SQS                 fauxqs (Node 20+), deploy/local/node_modules/fauxqs
//	Kinesis             kinesis-local (Node 20+), run from its own folder
//	MQTT                mochi-mqtt, embedded in this process (internal/mqttbroker)
//
// ./scripts/setup installs the emulators; Start reports which one is missing
// and how to install it. Each Start waits until every emulator answers a real
// API call. Close stops them (SIGTERM, then SIGKILL after a grace period) and
// reaps every child; children also get SIGKILL if this process dies first
// (Linux parent-death signal), so a killed test leaves nothing behind.
//
// # Caveats
//
// Every emulator listens on 127.0.0.1 only, though none has a setting for
// it: DynamoDB Local starts through deploy/local/DynamoDBLoopback.java
// (Java's single-file source launcher, so it needs a JDK), which binds its
// Jetty connector to loopback, and the Node emulators, which hard-code
// 0.0.0.0, get deploy/local/loopback.cjs preloaded. The embedded broker
// binds loopback itself. TestEverythingListensOnLoopbackOnly checks the
// sockets in /proc. All data is in memory and gone after Close.
package localstack
