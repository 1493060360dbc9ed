package enginetest

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/ddbjson"
)

type ddbAV = types.AttributeValue

func sv(s string) ddbAV { return &types.AttributeValueMemberS{Value: s} }
func nv(n uint64) ddbAV {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}

func marshalItem(item map[string]ddbAV) ([]byte, error) { return ddbjson.MarshalMap(item) }
