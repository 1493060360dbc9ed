package cfn

import (
	"slices"
	"strings"
	"testing"
)

// lbAttributes returns the load balancer's attributes as key -> value.
func lbAttributes(t *testing.T, tpl *Template) map[string]any {
	t.Helper()
	lb, ok := tpl.Resources["ApiLoadBalancer"]
	if !ok {
		t.Fatal("no ApiLoadBalancer")
	}
	out := map[string]any{}
	for _, a := range lb.Properties["LoadBalancerAttributes"].([]any) {
		m := asMap(a)
		out[m["Key"].(string)] = m["Value"]
	}
	return out
}

// TestLoadBalancerWritesAccessLogs: the API's load balancer writes access
// logs to a private, encrypted bucket whose policy is the one the ELB
// user guide documents (the log delivery principal may put objects under
// <prefix>/AWSLogs/<account>/), and is created after that policy.
func TestLoadBalancerWritesAccessLogs(t *testing.T) {
	tpl := stackTemplate(t)
	attrs := lbAttributes(t, tpl)
	if attrs["access_logs.s3.enabled"] != "true" {
		t.Fatalf("access_logs.s3.enabled = %v; want \"true\"", attrs["access_logs.s3.enabled"])
	}
	bucket := ""
	for _, b := range tpl.ResourceNames("AWS::S3::Bucket") {
		if RefersTo(attrs["access_logs.s3.bucket"], b) {
			bucket = b
		}
	}
	if bucket == "" {
		t.Fatalf("access_logs.s3.bucket %v is no bucket of the template", attrs["access_logs.s3.bucket"])
	}
	prefix, _ := attrs["access_logs.s3.prefix"].(string)
	if strings.Contains(prefix, "AWSLogs") {
		t.Errorf("access log prefix %q contains AWSLogs (ELB adds it)", prefix)
	}
	bp := tpl.Resources[bucket].Properties
	pab := asMap(bp["PublicAccessBlockConfiguration"])
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if pab[k] != true {
			t.Errorf("%s: %s = %v; want true", bucket, k, pab[k])
		}
	}
	if !strings.Contains(strings.Join(flatStrings(bp["BucketEncryption"]), " "), "AES256") {
		t.Errorf("%s: not encrypted with SSE-S3 (AES256), the only encryption access logs support", bucket)
	}
	env := Env{"AWS::AccountId": "123456789012", "AWS::Partition": "aws", bucket + ".Arn": "arn:aws:s3:::logs", "ElbLogDeliveryAccountId": "127311923021"}
	wantResource := "arn:aws:s3:::logs/" + prefix + "/AWSLogs/123456789012/*"
	var policy string
	for _, p := range tpl.ResourceNames("AWS::S3::BucketPolicy") {
		if RefersTo(tpl.Resources[p].Properties["Bucket"], bucket) {
			policy = p
		}
	}
	if policy == "" {
		t.Fatalf("no bucket policy on %s: ELB cannot write the logs", bucket)
	}
	delivery := false
	for _, st := range statements(tpl.Resources[policy].Properties["PolicyDocument"]) {
		res, err := EvalString(st["Resource"], env)
		if st["Effect"] == "Allow" && st["Action"] == "s3:PutObject" && err == nil && res == wantResource &&
			asMap(st["Principal"])["Service"] == "logdelivery.elasticloadbalancing.amazonaws.com" {
			delivery = true
		}
	}
	if !delivery {
		t.Errorf("%s does not let logdelivery.elasticloadbalancing.amazonaws.com put %s", policy, wantResource)
	}
	if deps := flatStrings(tpl.Resources["ApiLoadBalancer"].Attributes["DependsOn"]); !slices.Contains(deps, policy) {
		t.Errorf("ApiLoadBalancer does not depend on %s: ELB checks its access to the bucket when it is created", policy)
	}
}

// statements returns a policy document's statements, each branch of an
// Fn::If counted.
func statements(doc any) []map[string]any {
	var out []map[string]any
	for _, s := range asMap(doc)["Statement"].([]any) {
		m := asMap(s)
		if branches, ok := m["Fn::If"].([]any); ok && len(branches) == 3 {
			for _, b := range branches[1:] {
				if bm := asMap(b); bm != nil && bm["Effect"] != nil {
					out = append(out, bm)
				}
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

// flatStrings lists every string under v.
func flatStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, flatStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, flatStrings(e)...)
		}
		return out
	}
	return nil
}

// TestAPIBehindTheLoadBalancer: the API trusts the balancer's forwarding
// headers from its subnets only, serves no console in production, the
// public listener hides /console as well, and the balancer appends the
// client's address to X-Forwarded-For (what cloud/guard reads).
func TestAPIBehindTheLoadBalancer(t *testing.T) {
	tpl := stackTemplate(t)
	if m := lbAttributes(t, tpl)["routing.http.xff_header_processing.mode"]; m != "append" {
		t.Errorf("routing.http.xff_header_processing.mode = %v; want append", m)
	}
	env := map[string]any{}
	for _, c := range tpl.Resources["ApiTaskDefinition"].Properties["ContainerDefinitions"].([]any) {
		for _, e := range asMap(c)["Environment"].([]any) {
			m := asMap(e)
			env[m["Name"].(string)] = m["Value"]
		}
	}
	if !RefersTo(env["BOWLINE_TRUSTED_PROXIES"], "PublicSubnetCidrs") {
		t.Errorf("BOWLINE_TRUSTED_PROXIES = %v; want the load balancer's subnets (PublicSubnetCidrs)", env["BOWLINE_TRUSTED_PROXIES"])
	}
	if env["BOWLINE_CONSOLE_ADDR"] != "off" {
		t.Errorf("BOWLINE_CONSOLE_ADDR = %v; want off behind the public load balancer", env["BOWLINE_CONSOLE_ADDR"])
	}
	hidden := false
	for _, r := range tpl.ResourceNames("AWS::ElasticLoadBalancingV2::ListenerRule") {
		p := tpl.Resources[r].Properties
		paths := flatStrings(p["Conditions"])
		if RefersTo(p["ListenerArn"], "ApiListener") && slices.Contains(paths, "/console") && slices.Contains(paths, "/console/*") {
			hidden = slices.Contains(flatStrings(p["Actions"]), "fixed-response")
		}
	}
	if !hidden {
		t.Error("no rule on ApiListener answers /console and /console/* with a fixed response")
	}
}

// TestAuthFailuresAlarm: the API's auth_failure log lines (cloud/guard's
// FailureMessage) are counted by a metric filter on its log group, and an
// alarm on that metric notifies the alarm topic.
func TestAuthFailuresAlarm(t *testing.T) {
	tpl := stackTemplate(t)
	metric := ""
	for _, f := range tpl.ResourceNames("AWS::Logs::MetricFilter") {
		p := tpl.Resources[f].Properties
		if RefersTo(p["LogGroupName"], "ApiLogGroup") && p["FilterPattern"] == `"msg=auth_failure"` {
			for _, mt := range p["MetricTransformations"].([]any) {
				metric, _ = asMap(mt)["MetricName"].(string)
			}
		}
	}
	if metric == "" {
		t.Fatal(`no metric filter counts "msg=auth_failure" in ApiLogGroup`)
	}
	for _, a := range tpl.ResourceNames("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[a].Properties
		if p["MetricName"] == metric && RefersTo(p["AlarmActions"], "AlarmTopic") && p["ComparisonOperator"] == "GreaterThanThreshold" {
			return
		}
	}
	t.Errorf("no alarm on %s notifies AlarmTopic", metric)
}
