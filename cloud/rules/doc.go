// Package rules holds Bowline's AWS IoT topic rules as data, and the local
// stand-in that runs them.
//
// A Spec is one rule: its base name (the full name is
// wire.RuleName(stack, base)), the FROM topic filter, a SELECT list of
// items from a small closed set of expressions (an integer literal,
// topic(n), timestamp(), encode(*, 'base64')), the Kinesis action's
// partition key and the error action's queue. Spec.SQL renders the
// statement CloudFormation gives AWS IoT; Spec.Evaluate computes the same
// SELECT list for one message, so the stand-in and AWS share one
// definition. deploy/cfn's TestRulesMatchSpec reads every
// AWS::IoT::TopicRule of the template back into a Spec and fails when the
// template and this package differ, the way TestPipesMatchRelay keeps the
// Pipes and engine/relay alike.
//
// Runner is `bowline rules`, the stand-in for the rules engine, as
// `bowline relay` stands in for the Pipes: it subscribes to each rule's
// Basic Ingest topics ($aws/rules/<rule>/<FROM>) and, for a rule gateways
// also reach through the broker, to FROM itself; it evaluates the rule,
// puts the record into Kinesis through cloud/telemetry's Producer, and
// acknowledges the MQTT message only once the record is in the stream. A
// record it cannot put after its attempts goes to the rule-errors queue as
// AWS's error action message (ErrorMessage), and only then is the message
// acknowledged. cloud/app builds it (App.Rules).
//
// The design and the AWS behaviour it relies on, documented and assumed,
// are in docs/telemetry-path.md ("The rules").
//
// # Caveats
//
// Evaluate implements only the expressions Bowline's rules use; ParseSQL
// refuses anything else rather than guess. Where AWS's behaviour is not
// documented (the Basic Ingest topic the error message names, the number
// of times AWS retries an action, key order in the output JSON), the
// stand-in makes a documented choice, listed in docs/telemetry-path.md.
// The stand-in's QoS 1 acknowledgement comes after the record is durable;
// AWS IoT's PUBACK comes when the rules engine has the message, so a
// gateway must never treat a PUBACK as durability (it waits for the ack
// message).
package rules
