package subscribers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// UntaggedPet is the pet_tag a meal without one is recorded under.
const UntaggedPet = "untagged"

// historyDays is the window of the appetite average.
const historyDays = 7

// intakeAttempts bounds how often record_intake re-reads after losing a
// race on the day's row.
const intakeAttempts = 4

const dayLayout = "2006-01-02"

// dayRow is the part of an intake row the handler reads.
type dayRow struct {
	day    string
	grams  float64
	events []string
}

// errLostRace: another writer changed the day's row between read and write.
var errLostRace = errors.New("intake row changed concurrently")

func (s *Set) recordIntake(ctx context.Context, env engine.Envelope) error {
	// The payload is the meal's data (edge/wire) and ingest's provenance
	// (thing, device_event_id, ...): the data is checked as ingest
	// checks it, the rest ignored.
	payload, err := json.Marshal(env.Payload)
	if err != nil {
		return badPayload(env.Type, env.ID, "%v", err)
	}
	m, err := wire.DecodeAs[wire.MealFinished](payload, wire.DecodeOptions{AllowUnknown: true})
	if err != nil {
		return badPayload(env.Type, env.ID, "%v", err)
	}
	pet := m.PetTag
	if pet == "" {
		pet = UntaggedPet
	}
	day := m.StartedAt.UTC().Format(dayLayout)
	for range intakeAttempts {
		if err = s.addMeal(ctx, env, pet, day, m.GramsEaten); !errors.Is(err, errLostRace) {
			return err
		}
	}
	return err
}

// addMeal adds one meal to the pet's day, once per event id, emitting
// pet.appetite_dropped with the write when the meal opens a new day after a
// poor one.
func (s *Set) addMeal(ctx context.Context, env engine.Envelope, pet, day string, grams float64) error {
	rows, err := s.recentDays(ctx, env.Tenant, pet, day)
	if err != nil {
		return err
	}
	var today *dayRow
	if n := len(rows); n > 0 && rows[n-1].day == day {
		today, rows = &rows[n-1], rows[:n-1]
	}
	if today != nil && slices.Contains(today.events, env.ID) {
		return nil // this meal is already counted
	}
	update := &types.Update{
		TableName: aws.String(s.cfg.Names.AppTable()),
		Key:       intakeKey(env.Tenant, pet, day),
		UpdateExpression: aws.String("SET entity = :e, tenant = :t, pet_tag = :p, #day = :d, updated_at = :u " +
			"ADD grams :g, meals :one, event_ids :ids"),
		ConditionExpression:      aws.String("attribute_not_exists(event_ids) OR NOT contains(event_ids, :id)"),
		ExpressionAttributeNames: map[string]string{"#day": "day"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e": attr.S(EntityIntake), ":t": attr.S(env.Tenant), ":p": attr.S(pet), ":d": attr.S(day),
			":u": attr.S(s.cfg.Now().UTC().Format(engine.TimeLayout)),
			":g": attr.Float(grams), ":one": attr.N(1), ":ids": attr.SS(env.ID), ":id": attr.S(env.ID),
		},
	}
	if today == nil {
		if drop, ok := s.appetiteDrop(pet, day, rows); ok {
			// The day's row is created with the event: only the meal that
			// creates it may emit, once.
			update.ConditionExpression = aws.String("attribute_not_exists(pk)")
			delete(update.ExpressionAttributeValues, ":id")
			_, err := s.cfg.Emitter.EmitEvent(ctx, engine.Event{Type: catalog.TypeAppetiteDropped, Payload: drop, Writes: []engine.Write{{Update: update}}})
			if errors.Is(err, engine.ErrConditionFailed) {
				return errLostRace
			}
			if err != nil {
				return fmt.Errorf("record intake of pet %q on %s with %s: %w", pet, day, catalog.TypeAppetiteDropped, err)
			}
			s.log.Info("appetite dropped", "tenant", env.Tenant, "pet", pet, "day", drop.Day, "grams", drop.Grams, "average_g", drop.AverageG)
			return nil
		}
	}
	_, err = s.cfg.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: update.TableName, Key: update.Key, UpdateExpression: update.UpdateExpression,
		ConditionExpression: update.ConditionExpression, ExpressionAttributeNames: update.ExpressionAttributeNames,
		ExpressionAttributeValues: update.ExpressionAttributeValues,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // the event id is already in the day's set
	}
	if err != nil {
		return fmt.Errorf("record intake of pet %q on %s: %w", pet, day, err)
	}
	return nil
}

// appetiteDrop judges the day before day: it must be exactly yesterday and
// under half the average of the (at most seven, at least MinHistoryDays)
// days before it. rows are the days before day, oldest first.
func (s *Set) appetiteDrop(pet, day string, rows []dayRow) (catalog.AppetiteDropped, bool) {
	if len(rows) == 0 {
		return catalog.AppetiteDropped{}, false
	}
	d, _ := time.Parse(dayLayout, day)
	prev := rows[len(rows)-1]
	if prev.day != d.AddDate(0, 0, -1).Format(dayLayout) {
		return catalog.AppetiteDropped{}, false
	}
	cut := d.AddDate(0, 0, -1-historyDays).Format(dayLayout)
	var sum float64
	n := 0
	for _, r := range rows[:len(rows)-1] {
		if r.day >= cut {
			sum += r.grams
			n++
		}
	}
	if n < s.cfg.MinHistoryDays || n == 0 {
		return catalog.AppetiteDropped{}, false
	}
	avg := sum / float64(n)
	if prev.grams >= avg/2 {
		return catalog.AppetiteDropped{}, false
	}
	return catalog.AppetiteDropped{
		PetTag: pet, Day: prev.day, Grams: prev.grams,
		AverageG: math.Round(avg*10) / 10, Days: n,
	}, true
}

// recentDays reads the pet's rows from day-8 to day, oldest first.
func (s *Set) recentDays(ctx context.Context, tenant, pet, day string) ([]dayRow, error) {
	d, err := time.Parse(dayLayout, day)
	if err != nil {
		return nil, err
	}
	from := d.AddDate(0, 0, -1-historyDays).Format(dayLayout)
	out, err := s.cfg.DB.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.Names.AppTable()), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": attr.S(IntakePK(tenant, pet)), ":from": attr.S(IntakeSK(from)), ":to": attr.S(IntakeSK(day)),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("read intake of pet %q before %s: %w", pet, day, err)
	}
	rows := make([]dayRow, 0, len(out.Items))
	for _, it := range out.Items {
		r := dayRow{day: attr.GetS(it, "day")}
		if v, ok := it["grams"].(*types.AttributeValueMemberN); ok {
			r.grams, _ = strconv.ParseFloat(v.Value, 64)
		}
		if v, ok := it["event_ids"].(*types.AttributeValueMemberSS); ok {
			r.events = v.Value
		}
		rows = append(rows, r)
	}
	return rows, nil
}
