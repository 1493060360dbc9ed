package cfn

import (
	"testing"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awscalls"
)

// TestEventLogWritesOnlyInTransactions evaluates the template's roles on
// the writes a task role's holder could use to rewrite the log. AWS
// decides a Put, Update or Delete inside TransactWriteItems as PutItem,
// UpdateItem or DeleteItem with dynamodb:EnclosingOperation =
// TransactWriteItems, and a plain call without that key (Amazon DynamoDB
// Developer Guide, "Using IAM with DynamoDB transactions"); the recorder
// (internal/awscalls) fills the key in the same way.
func TestEventLogWritesOnlyInTransactions(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "p"}, "eu-west-1", awscalls.Account)
	events := env["EventsTable.Arn"]
	ev, head := engine.EventPK("t1"), engine.HeadPK("t1")
	ctx := func(pk string, tx bool) map[string][]string {
		c := map[string][]string{awscalls.KeyLeadingKeys: {pk}}
		if tx {
			c[awscalls.KeyEnclosingOperation] = []string{"TransactWriteItems"}
		}
		return c
	}
	denied := []struct {
		name   string
		action string
		pk     string
		tx     bool
	}{
		{"overwrite an event row", "dynamodb:PutItem", ev, false},
		{"update an event row", "dynamodb:UpdateItem", ev, false},
		{"update an event row in a transaction", "dynamodb:UpdateItem", ev, true},
		{"delete an event row", "dynamodb:DeleteItem", ev, false},
		{"delete an event row in a transaction", "dynamodb:DeleteItem", ev, true},
		{"put a head", "dynamodb:PutItem", head, false},
		{"move a head", "dynamodb:UpdateItem", head, false},
		{"delete a head", "dynamodb:DeleteItem", head, false},
		{"delete a head in a transaction", "dynamodb:DeleteItem", head, true},
		{"batch write", "dynamodb:BatchWriteItem", ev, false},
		{"PartiQL insert", "dynamodb:PartiQLInsert", ev, false},
	}
	for _, role := range []string{"IngestRole", "WorkerTaskRole", "ApiTaskRole", "EventsPipeRole", "AnchorRole", "OperatorRole", "CompletenessRole"} {
		p, err := tpl.RolePolicy(role, env)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range denied {
			d, err := p.Evaluate(Request{Action: tc.action, Resource: events, Context: ctx(tc.pk, tc.tx)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed || d.Deny < 0 {
				t.Errorf("role %s: %s (%s on %s, in transaction %v) = allowed %v, explicit deny %v; want explicitly denied",
					role, tc.name, tc.action, tc.pk, tc.tx, d.Allowed, d.Deny >= 0)
			}
		}
	}
	// Emit's own transaction still goes through for every task role.
	for _, role := range []string{"IngestRole", "WorkerTaskRole", "ApiTaskRole", "CompletenessRole"} {
		p, err := tpl.RolePolicy(role, env)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []Request{
			{Action: "dynamodb:PutItem", Resource: events, Context: ctx(ev, true)},
			{Action: "dynamodb:UpdateItem", Resource: events, Context: ctx(head, true)},
			{Action: "dynamodb:GetItem", Resource: events, Context: ctx(head, false)},
		} {
			if d, err := p.Evaluate(r); err != nil || !d.Allowed {
				t.Errorf("role %s: %s on %v = allowed %v, %v; want allowed (Emit)", role, r.Action, r.Context, d.Allowed, err)
			}
		}
	}
}

// TestOnlyTheAnchorRoleWritesAnchors: of every role in the template, only
// AnchorRole may write the anchors table, and it only with PutItem.
func TestOnlyTheAnchorRoleWritesAnchors(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "p",
		"ApiSecretArn":           "arn:aws:secretsmanager:eu-west-1:123456789012:secret:api",
		"ContainerRepositoryArn": "arn:aws:ecr:eu-west-1:123456789012:repository/bowline",
	}, "eu-west-1", awscalls.Account)
	anchors := env["AnchorsTable.Arn"]
	if anchors == "" {
		t.Fatal("template has no AnchorsTable with a TableName")
	}
	writes := []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
		"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete", "dynamodb:DeleteTable", "dynamodb:UpdateTable"}
	ctx := map[string][]string{awscalls.KeyLeadingKeys: {"ANCHOR#t1"}}
	roles := tpl.ResourceNames("AWS::IAM::Role")
	if len(roles) < 8 {
		t.Fatalf("template has %d roles; want at least 8", len(roles))
	}
	for _, role := range roles {
		p, err := tpl.RolePolicy(role, env)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range writes {
			for _, tx := range []bool{false, true} {
				c := ctx
				if tx {
					c = map[string][]string{awscalls.KeyLeadingKeys: {"ANCHOR#t1"}, awscalls.KeyEnclosingOperation: {"TransactWriteItems"}}
				}
				d, err := p.Evaluate(Request{Action: a, Resource: anchors, Context: c})
				if err != nil {
					t.Fatal(err)
				}
				want := role == "AnchorRole" && a == "dynamodb:PutItem"
				if d.Allowed != want {
					t.Errorf("role %s: %s on the anchors table (transaction %v) = allowed %v; want %v", role, a, tx, d.Allowed, want)
				}
			}
		}
	}
}

// lookAlikeEventKeys are partition keys that resemble an event row's
// ("TENANT#<t>#EVENT") or a head's without being one of them (issue 22):
// the events Pipe once relayed any pk ending in "#EVENT".
var lookAlikeEventKeys = []string{
	"X#EVENT",
	"tenant#t1#EVENT",
	"TENANT#EVENT",
	"#EVENT",
	"EVENT",
	"TENANT#t1#event",
	"TENANT#t1#EVENTS",
	"TENANT#t1#EVENT#",
	"XTENANT#t1#EVENT",
	" TENANT#t1#EVENT",
	"TENANT#t1",
	"TENANT#t1#HEADX",
	"EMIT#t1#EVENT",
	"SEQ#gw-1#EVENT",
	// IAM's StringLike "*" spans '#', so these two match TENANT#*#EVENT;
	// the worker refuses them (no valid tenant), not IAM.
	"TENANT##EVENT",
	"TENANT#a#b#EVENT",
}

// TestNoEventTableWriteOutsideATransaction: every role that reaches the
// events table is refused a plain PutItem, UpdateItem or DeleteItem of any
// key there, the look-alikes included; inside a transaction only the two
// key shapes of the log may be written (issue 22).
func TestNoEventTableWriteOutsideATransaction(t *testing.T) {
	tpl := stackTemplate(t)
	env := tpl.ResourceEnv(map[string]string{"StackPrefix": "p"}, "eu-west-1", awscalls.Account)
	events := env["EventsTable.Arn"]
	if len(lookAlikeEventKeys) != 16 {
		t.Fatalf("%d look-alike keys; the issue names 16 shapes", len(lookAlikeEventKeys))
	}
	keys := append([]string{engine.EventPK("t1"), engine.HeadPK("t1")}, lookAlikeEventKeys...)
	roles := []string{"IngestRole", "WorkerTaskRole", "ApiTaskRole", "OperatorRole", "ConsumerRole", "AnchorRole", "EventsPipeRole", "CompletenessRole"}
	for _, role := range roles {
		p, err := tpl.RolePolicy(role, env)
		if err != nil {
			t.Fatal(err)
		}
		for _, pk := range keys {
			for _, action := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"} {
				d, err := p.Evaluate(Request{Action: action, Resource: events, Context: map[string][]string{awscalls.KeyLeadingKeys: {pk}}})
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed || d.Deny < 0 {
					t.Errorf("role %s: plain %s of pk %q = allowed %v, explicit deny %v; want explicitly denied", role, action, pk, d.Allowed, d.Deny >= 0)
				}
			}
		}
		for _, pk := range lookAlikeEventKeys[:14] {
			for _, action := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem"} {
				d, err := p.Evaluate(Request{Action: action, Resource: events, Context: map[string][]string{
					awscalls.KeyLeadingKeys: {pk}, awscalls.KeyEnclosingOperation: {"TransactWriteItems"}}})
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed || d.Deny < 0 {
					t.Errorf("role %s: %s of pk %q in a transaction = allowed %v, explicit deny %v; want explicitly denied", role, action, pk, d.Allowed, d.Deny >= 0)
				}
			}
		}
	}
}
