// Package cfn reads Bowline's CloudFormation templates and checks them
// offline, with no AWS account: against the official CloudFormation resource
// specification (the db.json.gz of the npm package @aws-cdk/aws-service-spec,
// pinned in deploy/cfn-spec), for references that do not resolve, and for
// the policies Bowline promises (append-only event rows, no wildcard actions
// on data, IoT gateways confined to their own topics).
//
// Parse turns YAML, with the short intrinsic tags (!Ref, !GetAtt, !Sub, !If,
// ...), into the same tree the JSON form gives: {"Ref": x},
// {"Fn::GetAtt": [res, attr]}, {"Fn::Sub": s}. Check walks that tree against
// a Spec. The policy helpers (Statements, RoleStatements, IoTPolicy) let
// tests evaluate what a role or a device could do.
//
// The IAM evaluator (ResourceEnv, RolePolicy, Evaluate) decides requests
// against a role's identity policies as AWS does in one account, and
// CheckCalls runs it over a recording of AWS calls (internal/awscalls),
// with BowlineParts saying which role makes each part's calls; iamtest runs
// that check inside the tests that record (docs/iam.md).
//
// The checks themselves are the tests of this package; they fail if the
// template, engine/relay's pipe definitions or internal/resources' names
// change without the others.
//
// # Caveats
//
// Check validates shapes and names, not values CloudFormation only checks at
// deploy time (patterns, ranges, cross-property rules). The IoT evaluator
// covers the subset Bowline's policies use: Allow and Deny, * and ? in
// resources, thing-name and thing-attribute policy variables and the Bool
// IsAttached condition. The IAM evaluator covers identity policies only (no
// resource policies, boundaries or SCPs), the String, Bool and Null
// condition operators, and the condition keys the call recorder supplies;
// it refuses anything else rather than guess.
package cfn
