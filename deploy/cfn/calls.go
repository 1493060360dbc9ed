package cfn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bowline-iot/bowline/internal/awscalls"
)

// PartRoles says how the recorded calls of one part are checked: against
// each role in Roles, or, with no Roles, not at all, for Reason.
type PartRoles struct {
	Roles []string
	// Any marks a part shared by the tasks of Roles (the one engine of
	// `bowline dev`), whose recorded calls do not say which task asked for
	// them: a call passes when any of Roles allows it, is reported denied
	// (for each of them) only when none does, and counts as using no
	// role's grant. So a grant that only the shared part's calls reach is
	// reported unused; the tests that run each command as its own process
	// record the same calls under the command, charged to its role alone.
	Any    bool
	Reason string
}

// BowlineParts maps every part label a recording holds (cloud/app's Part*
// constants, the `bowline` command a process ran, and internal/provision's
// RecordedPart) to the roles of deploy/cloudformation/bowline.yaml that
// make its calls in AWS. A part missing here fails the check: decide which
// role it runs as first.
var BowlineParts = map[string]PartRoles{
	"ingest": {Roles: []string{"IngestRole"}},
	"worker": {Roles: []string{"WorkerTaskRole"}},
	"api":    {Roles: []string{"ApiTaskRole"}},
	// `bowline api` serves the console in the same task.
	"console": {Roles: []string{"ApiTaskRole"}},
	// In `bowline dev` ingest, the worker and the API share one engine,
	// so its own calls (head reads, event rows, EMIT# rows) do not say
	// whose emit they were: each must be allowed by one of the three, and
	// none is charged to all of them (Any). Run as its own command, each
	// part records the engine's calls under its name (cloud/ingest's
	// tests, cloud/cmd/bowline TestBowlineCommands).
	"engine":               {Roles: []string{"IngestRole", "WorkerTaskRole", "ApiTaskRole"}, Any: true},
	"relay:events":         {Roles: []string{"EventsPipeRole"}},
	"relay:record-changes": {Roles: []string{"RecordChangesPipeRole"}},
	"redrive":              {Roles: []string{"OperatorRole"}},
	"dead-letters":         {Roles: []string{"OperatorRole"}},
	"devices":              {Roles: []string{"OperatorRole"}},
	"verify-chain":         {Roles: []string{"OperatorRole"}},
	"rule-errors":          {Roles: []string{"OperatorRole"}},
	"anchor":               {Roles: []string{"AnchorRole"}},
	// `bowline completeness anchor`, the daily job (cloud/cmd/bowline's
	// anchorPart); `bowline completeness --thing` is an operator's read.
	"completeness-anchor": {Roles: []string{"CompletenessRole"}},
	"completeness":        {Roles: []string{"OperatorRole"}},
	// In AWS the topic rules' Kinesis and SQS actions run as
	// TelemetryRuleRole with kinesis:PutRecord; the stand-in batches with
	// PutRecords and resolves the queue URL (TestRulesMatchSpec keeps the
	// rule, its role and cloud/rules alike).
	"rules":       {Reason: "the local stand-in for the topic rules batches with PutRecords and resolves the error queue's URL; in AWS the rules engine acts as TelemetryRuleRole (kinesis:PutRecord, sqs:SendMessage)"},
	"relay":       {Reason: "only the local relay keeps checkpoints, looks up the stream and resolves the queue URL; an EventBridge Pipe keeps its own position and is configured with ARNs"},
	"provision":   {Reason: "in AWS, CloudFormation creates the tables and queues (bowline provision serves the local stack and development accounts)"},
	"dev":         {Reason: "bowline dev's status line and background chain check run only locally"},
	"consume":     {Roles: []string{"ConsumerRole"}},
	"eventsource": {Reason: "only the local event source stand-in keeps checkpoints and resolves the on-failure queue's URL; Lambda's mapping keeps its own position and is configured with ARNs"},
}

// DeniedCall is a recorded request a role does not allow.
type DeniedCall struct {
	Role      string              `json:"role"`
	Part      string              `json:"part"`
	Stack     string              `json:"stack"`
	Operation string              `json:"operation"`
	Action    string              `json:"action"`
	Resource  string              `json:"resource"`
	Context   map[string][]string `json:"context,omitempty"`
	// By is the explicit Deny that refused it; empty for an implicit deny.
	By string `json:"denied_by,omitempty"`
}

func (d DeniedCall) String() string {
	why := "no statement allows it"
	if d.By != "" {
		why = "explicitly denied by " + d.By
	}
	s := fmt.Sprintf("role %s denies %s on %s (part %s, %s; %s)", d.Role, d.Action, d.Resource, d.Part, d.Operation, why)
	if len(d.Context) > 0 {
		s += fmt.Sprintf(" context %v", d.Context)
	}
	return s
}

// UnusedGrant is an Allow (action, resource) pair of a role that no
// recorded request used.
type UnusedGrant struct {
	Source   string `json:"statement"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

// RoleReport is what the recording says of one role.
type RoleReport struct {
	Role string `json:"role"`
	// Requests is how many distinct recorded requests it was checked on.
	Requests int           `json:"requests"`
	Unused   []UnusedGrant `json:"unused_grants"`
}

// NotChecked is a part whose calls no role makes in AWS.
type NotChecked struct {
	Part     string `json:"part"`
	Requests int    `json:"requests"`
	Reason   string `json:"reason"`
}

// CallReport is the outcome of checking a recording against the template.
type CallReport struct {
	// Requests is how many recorded requests were checked against roles.
	Requests   int          `json:"requests"`
	Denied     []DeniedCall `json:"denied"`
	Roles      []RoleReport `json:"roles"`
	NotChecked []NotChecked `json:"not_checked"`
	// NotExercised are the roles of parts no recorded request came from.
	NotExercised []string `json:"roles_not_exercised"`
}

// CheckCalls evaluates every recorded request against the roles parts
// maps its part to, on the stack and in the region it was made. Denied
// requests are in recording order. It reports, for each role that was
// exercised, the Allow patterns nothing used. It fails on a request the
// recorder could not attribute to a resource, a part parts does not know,
// and a role policy that does not resolve (ResourceEnv, RolePolicy).
func CheckCalls(t *Template, calls []awscalls.Call, parts map[string]PartRoles) (*CallReport, error) {
	rep := &CallReport{Denied: []DeniedCall{}, Roles: []RoleReport{}, NotChecked: []NotChecked{}, NotExercised: []string{}}
	type polKey struct{ role, stack, region string }
	policies := map[polKey]*RolePolicy{}
	requests := map[string]int{}
	used := map[string]map[Use]bool{}
	skipped := map[string]int{}
	shapes := map[string]*RolePolicy{} // one resolution per role: its grants are the same on every stack
	for _, c := range calls {
		if c.Error != "" {
			return nil, fmt.Errorf("recorded %s by part %s: %s", c.Operation, c.Part, c.Error)
		}
		pr, ok := parts[c.Part]
		if !ok {
			return nil, fmt.Errorf("recorded %s by part %q, which no role is mapped to: add it to the part map", c.Action, c.Part)
		}
		if len(pr.Roles) == 0 {
			skipped[c.Part]++
			continue
		}
		rep.Requests++
		var denied []DeniedCall
		anyAllowed := false
		for _, role := range pr.Roles {
			k := polKey{role, c.Stack, c.Region}
			p, ok := policies[k]
			if !ok {
				env := t.ResourceEnv(map[string]string{"StackPrefix": c.Stack}, c.Region, awscalls.Account)
				var err error
				if p, err = t.RolePolicy(role, env); err != nil {
					return nil, err
				}
				policies[k] = p
				shapes[role] = p
			}
			d, err := p.Evaluate(Request{Action: c.Action, Resource: c.Resource, Context: c.Context})
			if err != nil {
				return nil, fmt.Errorf("evaluate %s on %s for role %s: %w", c.Action, c.Resource, role, err)
			}
			requests[role]++
			if !d.Allowed {
				dc := DeniedCall{Role: role, Part: c.Part, Stack: c.Stack, Operation: c.Operation, Action: c.Action, Resource: c.Resource, Context: c.Context}
				if d.Deny >= 0 {
					dc.By = p.Grants[d.Deny].Source
				}
				denied = append(denied, dc)
				continue
			}
			anyAllowed = true
			if pr.Any {
				continue
			}
			if used[role] == nil {
				used[role] = map[Use]bool{}
			}
			for _, u := range d.Allows {
				used[role][u] = true
			}
		}
		if !pr.Any || !anyAllowed {
			rep.Denied = append(rep.Denied, denied...)
		}
	}
	for _, role := range sortedKeys(shapes) {
		p := shapes[role]
		rr := RoleReport{Role: role, Requests: requests[role], Unused: []UnusedGrant{}}
		for i, g := range p.Grants {
			if g.Effect != "Allow" {
				continue
			}
			actions, resources := indexes(len(g.Actions), g.NotAction), indexes(len(g.Resources), g.NotResource)
			for _, a := range actions {
				for _, r := range resources {
					if used[role][Use{Grant: i, Action: a, Resource: r}] {
						continue
					}
					ug := UnusedGrant{Source: g.Source}
					if a < 0 {
						ug.Action = "NotAction " + strings.Join(g.Actions, ",")
					} else {
						ug.Action = g.Actions[a]
					}
					if r < 0 {
						ug.Resource = "NotResource " + strings.Join(g.Written, ",")
					} else {
						ug.Resource = g.Written[r]
					}
					rr.Unused = append(rr.Unused, ug)
				}
			}
		}
		rep.Roles = append(rep.Roles, rr)
	}
	for _, part := range sortedKeys(skipped) {
		rep.NotChecked = append(rep.NotChecked, NotChecked{Part: part, Requests: skipped[part], Reason: parts[part].Reason})
	}
	seen := map[string]bool{}
	for _, pr := range parts {
		for _, role := range pr.Roles {
			if shapes[role] == nil && !seen[role] {
				seen[role] = true
				rep.NotExercised = append(rep.NotExercised, role)
			}
		}
	}
	slices.Sort(rep.NotExercised)
	return rep, nil
}

// indexes is 0..n-1, or just -1 for a NotAction/NotResource list.
func indexes(n int, not bool) []int {
	if not {
		return []int{-1}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
