package awscalls

import (
	"math"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB request unit sizes.
const (
	// WriteUnit is the item size one write request unit writes.
	WriteUnit = 1024
	// ReadUnit is the item size one strongly consistent read request unit
	// reads (an eventually consistent read takes half).
	ReadUnit = 4096
)

// askCapacity sets ReturnConsumedCapacity to TOTAL on a DynamoDB input
// that has the field and leaves it empty.
func askCapacity(input any) {
	v := reflect.ValueOf(input)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	f := v.Elem().FieldByName("ReturnConsumedCapacity")
	if f.IsValid() && f.CanSet() && f.Kind() == reflect.String && f.String() == "" {
		f.SetString(string(ddbtypes.ReturnConsumedCapacityTotal))
	}
}

// dynamo adds the request units of one successful call: as the response
// reports them, else sized from the items (a lower bound for UpdateItem
// and DeleteItem, whose stored item the request does not carry).
// TransactWriteItems is always sized, 2 units per 1 KB of each item:
// DynamoDB Local reports a flat 4 units per table and transaction
// whatever the number of items (measured on 2026-12-05: 1, 2 and 3 puts
// of small items all report 4). u.mu must be held.
func (u *Usage) dynamo(input, result any) {
	write, key := dynamoKind(input)
	if write == 0 {
		return
	}
	_, transact := input.(*dynamodb.TransactWriteItemsInput)
	if reported := consumed(result); len(reported) > 0 && !transact {
		u.c.CapacityReported++
		for _, c := range reported {
			table := deref(c.TableName)
			switch {
			case c.WriteCapacityUnits != nil || c.ReadCapacityUnits != nil:
				u.add(true, table, key, value(c.WriteCapacityUnits))
				u.add(false, table, key, value(c.ReadCapacityUnits))
			default:
				u.add(write > 0, table, key, value(c.CapacityUnits))
			}
		}
		return
	}
	u.c.CapacitySized++
	u.size(input, result, key)
}

// dynamoKind says whether input writes (1) or reads (-1), 0 for neither,
// and the partition key of a single-item call.
func dynamoKind(input any) (int, string) {
	switch in := input.(type) {
	case *dynamodb.PutItemInput:
		return 1, pkOf(in.Item)
	case *dynamodb.UpdateItemInput:
		return 1, pkOf(in.Key)
	case *dynamodb.DeleteItemInput:
		return 1, pkOf(in.Key)
	case *dynamodb.BatchWriteItemInput, *dynamodb.TransactWriteItemsInput:
		return 1, ""
	case *dynamodb.GetItemInput:
		return -1, pkOf(in.Key)
	case *dynamodb.QueryInput:
		if l := queryLeading(in); len(l) == 1 {
			for _, v := range l {
				return -1, v[0]
			}
		}
		return -1, ""
	case *dynamodb.ScanInput, *dynamodb.BatchGetItemInput, *dynamodb.TransactGetItemsInput:
		return -1, ""
	}
	return 0, ""
}

func pkOf(item map[string]ddbtypes.AttributeValue) string {
	v, _ := scalar(item[PartitionKey])
	return v
}

// consumed returns the ConsumedCapacity of a DynamoDB output.
func consumed(result any) []ddbtypes.ConsumedCapacity {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	switch c := v.Elem().FieldByName("ConsumedCapacity"); {
	case !c.IsValid():
		return nil
	case c.Kind() == reflect.Pointer:
		if p, ok := c.Interface().(*ddbtypes.ConsumedCapacity); ok && p != nil {
			return []ddbtypes.ConsumedCapacity{*p}
		}
	case c.Kind() == reflect.Slice:
		s, _ := c.Interface().([]ddbtypes.ConsumedCapacity)
		return s
	}
	return nil
}

func value(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// add adds n write (or read) units of table, and of its partition key when
// known; u.mu must be held.
func (u *Usage) add(write bool, table, key string, n float64) {
	if n == 0 || table == "" {
		return
	}
	total, perKey, busiest := u.c.RRU, u.keyRRU, &u.c.MaxKeyRRU
	if write {
		total, perKey, busiest = u.c.WRU, u.keyWRU, &u.c.MaxKeyWRU
	}
	total[table] += n
	kinds := u.c.RRUByKind
	if write {
		kinds = u.c.WRUByKind
	}
	kinds[Kind(table, key)] += n
	if key != "" {
		k := table + "\x00" + key
		perKey[k] += n
		*busiest = math.Max(*busiest, perKey[k])
	}
}

// Kind names the kind of row a partition key is of, for the units by
// kind: the table, a space and the key up to its first '#' ("telemetry_state
// GW", "telemetry_state ROLLUP"); the table alone for a key without one.
func Kind(table, key string) string {
	if i := strings.IndexByte(key, '#'); i > 0 {
		return table + " " + key[:i]
	}
	return table
}

func writeUnits(item map[string]ddbtypes.AttributeValue) float64 {
	return float64(units(ItemSize(item), WriteUnit))
}

func readUnits(size int, consistent *bool) float64 {
	n := float64(units(size, ReadUnit))
	if consistent == nil || !*consistent {
		n /= 2
	}
	return n
}

// size adds the request units of a call sized from its items; u.mu must
// be held.
func (u *Usage) size(input, result any, key string) {
	switch in := input.(type) {
	case *dynamodb.PutItemInput:
		u.add(true, deref(in.TableName), key, writeUnits(in.Item))
	case *dynamodb.UpdateItemInput:
		u.add(true, deref(in.TableName), key, writeUnits(merge(in.Key, in.ExpressionAttributeValues)))
	case *dynamodb.DeleteItemInput:
		u.add(true, deref(in.TableName), key, 1)
	case *dynamodb.BatchWriteItemInput:
		for table, reqs := range in.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					u.add(true, table, pkOf(r.PutRequest.Item), writeUnits(r.PutRequest.Item))
				case r.DeleteRequest != nil:
					u.add(true, table, pkOf(r.DeleteRequest.Key), 1)
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, w := range in.TransactItems {
			switch {
			case w.Put != nil:
				u.add(true, deref(w.Put.TableName), pkOf(w.Put.Item), 2*writeUnits(w.Put.Item))
			case w.Update != nil:
				u.add(true, deref(w.Update.TableName), pkOf(w.Update.Key), 2*writeUnits(merge(w.Update.Key, w.Update.ExpressionAttributeValues)))
			case w.Delete != nil:
				u.add(true, deref(w.Delete.TableName), pkOf(w.Delete.Key), 2)
			case w.ConditionCheck != nil:
				u.add(false, deref(w.ConditionCheck.TableName), pkOf(w.ConditionCheck.Key), 2)
			}
		}
	case *dynamodb.GetItemInput:
		out, _ := result.(*dynamodb.GetItemOutput)
		var item map[string]ddbtypes.AttributeValue
		if out != nil {
			item = out.Item
		}
		u.add(false, deref(in.TableName), key, readUnits(ItemSize(item), in.ConsistentRead))
	case *dynamodb.QueryInput:
		if out, ok := result.(*dynamodb.QueryOutput); ok {
			u.add(false, deref(in.TableName), key, readUnits(itemsSize(out.Items), in.ConsistentRead))
		}
	case *dynamodb.ScanInput:
		if out, ok := result.(*dynamodb.ScanOutput); ok {
			u.add(false, deref(in.TableName), "", readUnits(itemsSize(out.Items), in.ConsistentRead))
		}
	case *dynamodb.BatchGetItemInput:
		if out, ok := result.(*dynamodb.BatchGetItemOutput); ok {
			for table, items := range out.Responses {
				for _, it := range items {
					u.add(false, table, pkOf(it), readUnits(ItemSize(it), in.RequestItems[table].ConsistentRead))
				}
			}
		}
	case *dynamodb.TransactGetItemsInput:
		if out, ok := result.(*dynamodb.TransactGetItemsOutput); ok {
			for i, r := range out.Responses {
				if i < len(in.TransactItems) && in.TransactItems[i].Get != nil {
					g := in.TransactItems[i].Get
					u.add(false, deref(g.TableName), pkOf(g.Key), 2*float64(units(ItemSize(r.Item), ReadUnit)))
				}
			}
		}
	}
}

func merge(a, b map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	out := make(map[string]ddbtypes.AttributeValue, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func itemsSize(items []map[string]ddbtypes.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += ItemSize(it)
	}
	return n
}

// ItemSize is an item's size as DynamoDB counts it for request units:
// each attribute's name plus its value (strings and binaries by length,
// numbers by about half their significant digits, booleans and nulls one
// byte, lists and maps 3 bytes plus one per element).
func ItemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v ddbtypes.AttributeValue) int {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		return numberSize(x.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += numberSize(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		n := 0
		for _, b := range x.Value {
			n += len(b)
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is about 1 byte per two significant digits, plus 1.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, ".", "")
	s = strings.Trim(s, "0")
	return (len(s)+1)/2 + 1
}
