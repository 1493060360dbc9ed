package cfn

import (
	"maps"
	"regexp"
	"strings"
	"testing"
)

// secretName is what an environment variable holding a secret is called.
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|CERT|CREDENTIAL)`)

// TestTaskSecretsComeFromSecretsManager: no container gets a secret as a
// plain environment value (it would show in the task definition and the
// console); each arrives through Secrets, valueFrom a Secrets Manager ARN
// that the task execution role may read (ECS reads it at start with that
// role, never the task role).
func TestTaskSecretsComeFromSecretsManager(t *testing.T) {
	tpl := stackTemplate(t)
	env := maps.Clone(stackEnv)
	env["ApiSecretArn"] = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod-api-AbCdEf"
	var readable []string
	stmts, _, err := tpl.RoleStatements("TaskExecutionRole")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		for _, a := range s.Actions {
			if s.Effect == "Allow" && MatchAction(a, "secretsmanager:GetSecretValue") {
				for _, r := range s.Resources {
					v, err := EvalString(r, env)
					if err != nil {
						t.Fatal(err)
					}
					readable = append(readable, v)
				}
			}
		}
	}
	var secrets int
	for _, name := range tpl.ResourceNames("AWS::ECS::TaskDefinition") {
		props := tpl.Resources[name].Properties
		if !RefersTo(props["ExecutionRoleArn"], "TaskExecutionRole") {
			t.Errorf("%s: ExecutionRoleArn does not name TaskExecutionRole", name)
		}
		for _, c := range listOf(props["ContainerDefinitions"]) {
			cm := asMap(c)
			for _, e := range listOf(cm["Environment"]) {
				if n, _ := asMap(e)["Name"].(string); secretName.MatchString(n) {
					t.Errorf("%s container %v: %s is a plain environment value; want it under Secrets", name, cm["Name"], n)
				}
			}
			for _, e := range listOf(cm["Secrets"]) {
				secrets++
				em := asMap(e)
				from, err := EvalString(em["ValueFrom"], env)
				if err != nil {
					t.Fatalf("%s secret %v: %v", name, em["Name"], err)
				}
				if !strings.HasPrefix(from, "arn:aws:secretsmanager:") {
					t.Errorf("%s secret %v: valueFrom %s; want a Secrets Manager ARN", name, em["Name"], from)
					continue
				}
				// valueFrom is <secret arn>:<json key>:<version stage>:<version id>.
				arn := strings.Join(strings.Split(from, ":")[:7], ":")
				ok := false
				for _, r := range readable {
					ok = ok || MatchGlob(r, arn)
				}
				if !ok {
					t.Errorf("%s secret %v: the task execution role may not read %s (it reads %v)", name, em["Name"], arn, readable)
				}
			}
		}
	}
	if secrets < 3 {
		t.Errorf("task definitions hold %d secrets; want at least the API's three", secrets)
	}
}
