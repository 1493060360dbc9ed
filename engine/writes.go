package engine

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Write is one of the caller's own writes, committed in the same transaction
// as its event: exactly one of Put, Update, Delete or ConditionCheck, on any
// table but the events table.
type Write = types.TransactWriteItem

// checkWrites validates the caller's writes and returns their estimated
// size in bytes.
func (e *Engine) checkWrites(writes []Write, maxWrites int) (int, error) {
	if len(writes) > maxWrites {
		return 0, fmt.Errorf("%w: %d writes; at most %d fit in one transaction with the event", ErrTooManyWrites, len(writes), maxWrites)
	}
	total := 0
	for i, w := range writes {
		table, size, n := "", 0, 0
		if w.Put != nil {
			n++
			table, size = aws.ToString(w.Put.TableName), itemSize(w.Put.Item)+exprSize(w.Put.ExpressionAttributeValues)
		}
		if w.Update != nil {
			n++
			table, size = aws.ToString(w.Update.TableName), itemSize(w.Update.Key)+exprSize(w.Update.ExpressionAttributeValues)+len(aws.ToString(w.Update.UpdateExpression))
		}
		if w.Delete != nil {
			n++
			table, size = aws.ToString(w.Delete.TableName), itemSize(w.Delete.Key)+exprSize(w.Delete.ExpressionAttributeValues)
		}
		if w.ConditionCheck != nil {
			n++
			table, size = aws.ToString(w.ConditionCheck.TableName), itemSize(w.ConditionCheck.Key)+exprSize(w.ConditionCheck.ExpressionAttributeValues)
		}
		switch {
		case n != 1:
			return 0, fmt.Errorf("%w: write %d has %d of Put, Update, Delete, ConditionCheck; want exactly 1", ErrInvalidWrite, i, n)
		case table == "":
			return 0, fmt.Errorf("%w: write %d has no table name", ErrInvalidWrite, i)
		case table == e.cfg.EventsTable:
			return 0, fmt.Errorf("%w: write %d targets %q", ErrEventsTableWrite, i, table)
		}
		total += size
	}
	return total, nil
}

func exprSize(m map[string]types.AttributeValue) int { return itemSize(m) }

// itemSize estimates an item's size as DynamoDB counts it: attribute name
// lengths plus value sizes.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 2
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += len(s)/2 + 2
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// writeItems names the items writes touch, as "table\x00pk\x00sk", so a
// group never holds two operations on one item: DynamoDB refuses such a
// transaction, and DynamoDB Local instead evaluates the second against the
// first, failing it before the first has committed. A Put is identified by
// its "pk" and "sk" attributes (the key schema of every Bowline table); a
// Put without "pk" is not identified.
func writeItems(writes []Write) []string {
	var ids []string
	add := func(table *string, key map[string]types.AttributeValue) {
		pk, ok := key["pk"].(*types.AttributeValueMemberS)
		if !ok {
			return
		}
		id := aws.ToString(table) + "\x00" + pk.Value
		if sk, ok := key["sk"].(*types.AttributeValueMemberS); ok {
			id += "\x00" + sk.Value
		}
		ids = append(ids, id)
	}
	for _, w := range writes {
		switch {
		case w.Put != nil:
			add(w.Put.TableName, w.Put.Item)
		case w.Update != nil:
			add(w.Update.TableName, w.Update.Key)
		case w.Delete != nil:
			add(w.Delete.TableName, w.Delete.Key)
		case w.ConditionCheck != nil:
			add(w.ConditionCheck.TableName, w.ConditionCheck.Key)
		}
	}
	return ids
}
