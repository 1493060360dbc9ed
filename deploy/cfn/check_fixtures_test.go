package cfn

import (
	"strings"
	"testing"
)

// TestCheckFindsMistakes feeds Check small templates, each with one mistake,
// and wants exactly the problems listed (path and message fragment).
func TestCheckFindsMistakes(t *testing.T) {
	s := resourceSpec(t)
	head := "Parameters:\n  P: {Type: String}\nConditions:\n  C: !Equals [!Ref P, x]\nResources:\n  Q: {Type: AWS::SQS::Queue}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // "path: fragment"
	}{
		{"clean", head + "  T:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !Sub '${P}-${Q.QueueName}-${!literal}', Tags: [{Key: k, Value: v}]}\n", nil},
		{"unknown type", head + "  X: {Type: AWS::SQS::Queueue}\n", []string{"Resources.X.Type: resource type \"AWS::SQS::Queueue\""}},
		{"unknown property", head + "  X:\n    Type: AWS::SQS::Queue\n    Properties: {QueueNam: q}\n", []string{"Resources.X.Properties.QueueNam: unknown property"}},
		{"unknown nested property", head + "  X:\n    Type: AWS::DynamoDB::Table\n    Properties:\n      KeySchema: [{AttributeName: pk, KeyType: HASH}]\n      StreamSpecification: {StreamView: NEW_IMAGE}\n",
			[]string{"Resources.X.Properties.StreamSpecification.StreamView: unknown property", "Resources.X.Properties.StreamSpecification: required property \"StreamViewType\""}},
		{"required missing", head + "  X:\n    Type: AWS::IoT::Policy\n    Properties: {PolicyName: p}\n", []string{"Resources.X.Properties: required property \"PolicyDocument\" is missing"}},
		{"wrong shape", head + "  X:\n    Type: AWS::SQS::Queue\n    Properties: {FifoQueue: maybe, VisibilityTimeout: [1]}\n",
			[]string{"Resources.X.Properties.FifoQueue: want a boolean", "Resources.X.Properties.VisibilityTimeout: want a number"}},
		{"dangling Ref", head + "  X:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !Ref Nope}\n", []string{"Resources.X.Properties.TopicName.Ref: Ref \"Nope\" resolves to no"}},
		{"dangling GetAtt resource", head + "  X:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !GetAtt Nope.Arn}\n", []string{"GetAtt Nope.Arn: resource \"Nope\" is not defined"}},
		{"unknown attribute", head + "  X:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !GetAtt Q.Url}\n", []string{"GetAtt Q.Url: AWS::SQS::Queue has no attribute \"Url\""}},
		{"dangling Sub variable", head + "  X:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !Sub '${P}-${iot:Connection.Thing.ThingName}'}\n", []string{"${iot:Connection.Thing.ThingName} resolves to no"}},
		{"Sub attribute", head + "  X:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !Sub '${Q.Nope}'}\n", []string{"GetAtt Q.Nope: AWS::SQS::Queue has no attribute"}},
		{"Sub variables", head + "  X:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !Sub ['${a}-${P}', {a: x}]}\n", nil},
		{"undefined condition", head + "  X:\n    Type: AWS::SNS::Topic\n    Condition: D\n    Properties: {TopicName: !If [E, a, b]}\n",
			[]string{"Resources.X.Condition: condition D", "Resources.X.Properties.TopicName.Fn::If: condition E"}},
		{"If branch checked", head + "  X:\n    Type: AWS::SQS::Queue\n    Properties: {FifoQueue: !If [C, true, [x]]}\n", []string{"Resources.X.Properties.FifoQueue.Fn::If[2]: want a boolean"}},
		{"dangling DependsOn", head + "  X:\n    Type: AWS::SNS::Topic\n    DependsOn: [Q, Z]\n", []string{"Resources.X.DependsOn: resource Z"}},
		{"unknown resource key", head + "  X:\n    Type: AWS::SNS::Topic\n    DeletePolicy: Retain\n", []string{"Resources.X: unknown resource key \"DeletePolicy\""}},
		{"Ref in a policy document", head + "  X:\n    Type: AWS::IAM::ManagedPolicy\n    Properties:\n      PolicyDocument: {Statement: [{Effect: Allow, Action: sqs:SendMessage, Resource: !GetAtt Q.Nope}]}\n",
			[]string{"AWS::SQS::Queue has no attribute \"Nope\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := Check(tpl, s)
			for _, w := range tc.want {
				found := false
				for _, p := range got {
					found = found || strings.Contains(p.String(), w)
				}
				if !found {
					t.Errorf("problems %v; want one containing %q", got, w)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d problems %v; want %d", len(got), got, len(tc.want))
			}
		})
	}
}
