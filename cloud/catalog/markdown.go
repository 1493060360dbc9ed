package catalog

import (
	"fmt"
	"io"
	"strings"

	"github.com/bowline-iot/bowline/engine"
)

// WriteMarkdown prints catalog c as the two tables of docs/contract.md's
// "Event catalog" (`bowline catalog --markdown`): every type with its
// payload type and fields, producers and what happened, sorted by type;
// then every subscription with its pattern and lane, in declaration order,
// those of one pattern and lane on one line. A type's fields come from its
// payload type (PayloadType: "optional" for omitempty, the fields of each
// element of a list or map), else from c's Fields. The row.* types are one
// line: their payload is the engine's images (Rows).
// TestContractDocMatchesCatalog keeps docs/contract.md equal to it.
func WriteMarkdown(w io.Writer, c engine.Catalog) error {
	var b strings.Builder
	b.WriteString("| type | payload | fields | producers | what happened |\n|---|---|---|---|---|\n")
	desc := map[string]string{}
	for _, t := range c.Types {
		desc[t.Name] = t.Description
	}
	var rows []string
	for _, e := range c.Entries() {
		if strings.HasPrefix(e.Type, "row.") {
			rows = append(rows, e.Type)
			continue
		}
		payload, fields := "-", codeList(e.Fields)
		if t, ok := PayloadType(e.Type); ok {
			payload, fields = "`"+t.String()+"`", fieldsMarkdown(FieldsOf(t))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", e.Type, payload, dash(fields), dash(strings.Join(e.Producers, ", ")), cell(desc[e.Type]))
	}
	if len(rows) > 0 {
		var entities []string
		seen := map[string]bool{}
		var producers []string
		for _, name := range rows {
			if entity, _ := rowParts(name); !seen[entity] {
				seen[entity] = true
				entities = append(entities, entity)
			}
		}
		for _, p := range c.Producers {
			for _, typ := range p.Emits {
				if strings.HasPrefix(typ, "row.") {
					producers = append(producers, p.Name)
					break
				}
			}
		}
		fmt.Fprintf(&b, "| `row.<entity>.<%s>` | engine (`engine/recordchange`) | `keys`, `new`, `old`: the row's images as plain JSON | %s | an app-table row changed; entities %s |\n",
			strings.Join(rowOps, `\|`), dash(strings.Join(producers, ", ")), codeList(entities))
	}

	b.WriteString("\n| subscription | pattern | lane |\n|---|---|---|\n")
	subs := c.Subscriptions
	for i := 0; i < len(subs); {
		j := i + 1
		for j < len(subs) && subs[j].Pattern == subs[i].Pattern && subs[j].Lane == subs[i].Lane {
			j++
		}
		names := make([]string, 0, j-i)
		for _, s := range subs[i:j] {
			names = append(names, s.Name)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", codeList(names), subs[i].Pattern, subs[i].Lane)
		i = j
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fieldsMarkdown lists fields as `name`, with "optional" before an
// omitempty one and an element's fields in parentheses.
func fieldsMarkdown(fields []Field) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		s := "`" + f.Name + "`"
		if f.Optional {
			s = "optional " + s
		}
		if f.Each != nil {
			each := "each"
			if f.Map {
				each = "per key"
			}
			s += " (" + each + ": " + fieldsMarkdown(f.Each) + ")"
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

func codeList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell escapes the table separator in s.
func cell(s string) string { return dash(strings.ReplaceAll(s, "|", `\|`)) }
