package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// dayRollups answers a Query of the rollup rows of day with one row
// carrying a completeness tally, and any other day with nothing.
type dayRollups struct{ day time.Time }

func (d dayRollups) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	from := in.ExpressionAttributeValues[":from"].(*types.AttributeValueMemberS).Value
	if !strings.HasPrefix(from, d.day.Format(time.DateOnly)) {
		return &dynamodb.QueryOutput{}, nil
	}
	return &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{{
		"pk": &types.AttributeValueMemberS{Value: "ROLLUP#gw-1:a"},
		"sk": &types.AttributeValueMemberS{Value: d.day.Add(10*time.Hour+30*time.Minute).Format("2006-01-02T15:04") + "#p-1"},
		"c":  &types.AttributeValueMemberS{Value: `{"seqs":{"ob1":[[1,50],[61,100]]},"dups":3}`},
	}}}, nil
}

// The bowl page shows today's completeness on the bowls' clock: 100
// assigned, 90 durable, 10 missing, 3 duplicates collapsed.
func TestBowlPageShowsCompleteness(t *testing.T) {
	day := time.Now().UTC().Truncate(24 * time.Hour)
	cfg := testConfig(&countingRedriver{})
	cfg.Rollups = dayRollups{day}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.devices = map[string]string{"gw-1:a": "acme"}
	c.mu.Unlock()
	ck, _, _ := login(t, c, testToken)
	req := httptest.NewRequest(http.MethodGet, Prefix+"bowls/gw-1:a", nil)
	req.AddCookie(ck)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET bowl page: %d:\n%s", rec.Code, rec.Body.String())
	}
	row := regexp.MustCompile(`(?s)<tr data-day="` + day.Format(time.DateOnly) + `">(.*?)</tr>`).FindStringSubmatch(rec.Body.String())
	if row == nil {
		t.Fatalf("bowl page has no completeness row for %s:\n%s", day.Format(time.DateOnly), rec.Body.String())
	}
	cells := regexp.MustCompile(`<td[^>]*>([^<]*)`).FindAllStringSubmatch(row[1], -1)
	var got []string
	for _, x := range cells {
		got = append(got, strings.TrimSpace(x[1]))
	}
	want := []string{day.Format(time.DateOnly), "100", "90", "0", "10", "3", "0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("completeness cells = %v; want %v", got, want)
	}
	if !strings.Contains(rec.Body.String(), "per UTC day of bowl time") {
		t.Error("completeness table does not name its clock")
	}
}
