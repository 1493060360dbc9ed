package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/gowebpki/jcs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
)

// IdempotencyKeyHeader names the client's idempotency key on POST /v1/orders.
const IdempotencyKeyHeader = "Idempotency-Key"

// CorrelationIDHeader optionally names the request's correlation id (same
// rule as the ids of the body); the order id when absent.
const CorrelationIDHeader = "X-Correlation-Id"

// ReplayedHeader is set on a response replayed for a repeated key.
const ReplayedHeader = "Idempotent-Replayed"

// maxItems bounds the lines of one order (the row must stay well under
// DynamoDB's 400 KB item limit).
const maxItems = 100

// validate checks an order's fields (docs/commerce.md, "Field rules").
func (o OrderRequest) validate() error {
	if err := checkIDField("customer_id", o.CustomerID); err != nil {
		return err
	}
	if err := checkIDField("pet_id", o.PetID); err != nil {
		return err
	}
	switch {
	case len(o.Items) == 0:
		return errors.New("items: at least one required")
	case len(o.Items) > maxItems:
		return fmt.Errorf("items: %d lines; at most %d", len(o.Items), maxItems)
	case o.AmountCents != nil && *o.AmountCents < 0:
		return fmt.Errorf("amount_cents %d: must not be negative", *o.AmountCents)
	}
	if o.Currency != nil {
		if err := checkCurrency("currency", *o.Currency); err != nil {
			return err
		}
	}
	for i, it := range o.Items {
		if err := checkSKU(fmt.Sprintf("items[%d].sku", i), it.SKU); err != nil {
			return err
		}
		if it.Qty < 1 || it.Qty > maxQty {
			return fmt.Errorf("items[%d].qty %d: want 1 to %d", i, it.Qty, maxQty)
		}
	}
	return nil
}

// idemRow is the stored outcome of an Idempotency-Key.
type idemRow struct {
	PK       string `dynamodbav:"pk"`
	BodyHash string `dynamodbav:"body_hash"`
	Status   int    `dynamodbav:"status"`
	Response string `dynamodbav:"response"`
	OrderID  string `dynamodbav:"order_id"`
	Created  string `dynamodbav:"created_at"`
	TTL      int64  `dynamodbav:"ttl"`
}

func validIdempotencyKey(k string) error {
	if len(k) > maxIdempotencyKey {
		return fmt.Errorf("%s: %d bytes; at most %d", IdempotencyKeyHeader, len(k), maxIdempotencyKey)
	}
	for _, r := range k {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return fmt.Errorf("%s %q: printable ASCII only", IdempotencyKeyHeader, k)
		}
	}
	return nil
}

// bodyHash is the hash of the body's RFC 8785 canonical form, so a client
// that re-serialises the same request (other key order, other spacing)
// still sends "the same body".
func bodyHash(body []byte) (string, error) {
	canon, err := jcs.Transform(body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

func (a *API) createOrder(w http.ResponseWriter, r *http.Request) {
	tenant, ok := a.authTenant(w, r)
	if !ok {
		return
	}
	body, ok := a.readBody(w, r)
	if !ok {
		return
	}
	var req OrderRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "order: "+err.Error())
		return
	}
	if err := req.validate(); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "order: "+err.Error())
		return
	}
	amount, currency, err := a.cfg.Prices.total(req.Items)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "order: "+err.Error())
		return
	}
	if (req.AmountCents != nil && *req.AmountCents != amount) || (req.Currency != nil && *req.Currency != currency) {
		writeError(w, http.StatusConflict, CodePriceMismatch,
			fmt.Sprintf("order: the price list makes these items %s; the request expected %s", catalog.Money(amount, currency), expected(req, currency)))
		return
	}
	key := r.Header.Get(IdempotencyKeyHeader)
	var hash string
	if key != "" {
		if err := validIdempotencyKey(key); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		}
		h, err := bodyHash(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidJSON, "order body: "+err.Error())
			return
		}
		hash = h
	}

	now := a.cfg.Now().UTC()
	id, err := newOrderID(now)
	if err != nil {
		a.internal(w, r, err)
		return
	}
	corr := r.Header.Get(CorrelationIDHeader)
	if corr == "" {
		corr = id
	} else if err := checkIDField(CorrelationIDHeader, corr); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	order := Order{
		PK: OrderPK(id), SK: OrderSK, Entity: EntityOrder,
		ID: id, Tenant: tenant, CustomerID: req.CustomerID, PetID: req.PetID, Items: req.Items,
		AmountCents: amount, Currency: currency, Status: StatusPending, CorrelationID: corr,
		CreatedAt: now.Format(engine.TimeLayout),
	}
	resp, err := json.Marshal(order)
	if err != nil {
		a.internal(w, r, fmt.Errorf("encode order %s: %w", id, err))
		return
	}
	resp = append(resp, '\n')
	item, err := attributevalue.MarshalMap(order)
	if err != nil {
		a.internal(w, r, fmt.Errorf("marshal order %s: %w", id, err))
		return
	}
	writes := []engine.Write{{Put: &types.Put{
		TableName: aws.String(a.cfg.Names.AppTable()), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}}
	if key != "" {
		row, err := attributevalue.MarshalMap(idemRow{
			PK: idemPK(tenant, key), BodyHash: hash, Status: http.StatusCreated, Response: string(resp),
			OrderID: id, Created: order.CreatedAt, TTL: now.Add(a.cfg.IdempotencyTTL).Unix(),
		})
		if err != nil {
			a.internal(w, r, fmt.Errorf("marshal idempotency row: %w", err))
			return
		}
		writes = append(writes, engine.Write{Put: &types.Put{
			TableName: aws.String(a.cfg.Names.InboxTable()), Item: row,
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}})
	}
	ctx := engine.WithCorrelationID(engine.WithActor(engine.WithTenant(r.Context(), tenant), "api:"+req.CustomerID), corr)
	payload := catalog.OrderCreated{
		OrderID: id, CustomerID: req.CustomerID, PetID: req.PetID,
		Items: lines(req.Items), AmountCents: amount, Currency: currency,
	}
	env, err := a.cfg.Emitter.EmitEvent(ctx, engine.Event{Type: catalog.TypeOrderCreated, Payload: payload, Writes: writes})
	var cf *engine.ConditionFailedError
	switch {
	case err == nil:
		a.obs.Emitted(catalog.TypeOrderCreated)
		a.log.Info("order created", "tenant", tenant, "order", id, "event", env.ID)
		writeRaw(w, http.StatusCreated, resp)
	case key != "" && errors.As(err, &cf) && cf.Write == 1:
		a.replay(w, r, tenant, key, hash)
	default:
		a.emitFailed(w, r, fmt.Errorf("create order for tenant %q: %w", tenant, err))
	}
}

// lines are an order's items as its events carry them. nil stays nil, so
// an order without stored lines keeps "items":null.
func lines(items []Item) []catalog.Item {
	if items == nil {
		return nil
	}
	out := make([]catalog.Item, len(items))
	for i, it := range items {
		out[i] = catalog.Item(it)
	}
	return out
}

// newOrderID returns a ULID of now whose 80 random bits are read from
// crypto/rand for every order, so no order id tells another
// (docs/commerce.md, "Orders are keyed by id, not by tenant"). ulid.Make's
// source is a math/rand seeded from the clock and, within a millisecond,
// monotonic.
func newOrderID(now time.Time) (string, error) {
	id, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("order id: %w", err)
	}
	return id.String(), nil
}

// expected is what the client said it expects to pay, for an error; an
// amount without a currency is said in the price list's currency.
func expected(req OrderRequest, listCurrency string) string {
	switch {
	case req.AmountCents != nil && req.Currency != nil:
		return catalog.Money(*req.AmountCents, *req.Currency)
	case req.AmountCents != nil:
		return catalog.Money(*req.AmountCents, listCurrency) + " in any currency"
	case req.Currency != nil:
		return "any amount in " + *req.Currency
	}
	return "any amount in any currency"
}

// replay answers a repeated Idempotency-Key from its stored outcome.
func (a *API) replay(w http.ResponseWriter, r *http.Request, tenant, key, hash string) {
	out, err := a.cfg.DB.GetItem(r.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(a.cfg.Names.InboxTable()), ConsistentRead: aws.Bool(true),
		Key: idemKey(tenant, key),
	})
	if err != nil {
		a.unavailable(w, r, fmt.Errorf("read idempotency key %q of tenant %q: %w", key, tenant, err))
		return
	}
	var row idemRow
	if out.Item == nil {
		// Written and expired between our condition and this read: rare
		// enough that the client may simply retry.
		a.unavailable(w, r, fmt.Errorf("idempotency key %q of tenant %q vanished", key, tenant))
		return
	}
	if err := attributevalue.UnmarshalMap(out.Item, &row); err != nil {
		a.internal(w, r, fmt.Errorf("decode idempotency row %q: %w", key, err))
		return
	}
	if row.BodyHash != hash {
		a.obs.IdempotencyRepeat(IdempotencyConflict)
		writeError(w, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused,
			fmt.Sprintf("%s %q was used with a different body (order %s)", IdempotencyKeyHeader, key, row.OrderID))
		return
	}
	a.obs.IdempotencyRepeat(IdempotencyReplayed)
	w.Header().Set(ReplayedHeader, "true")
	writeRaw(w, row.Status, []byte(row.Response))
}

// readBody reads at most MaxBodyBytes, answering 413 beyond.
func (a *API) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "body exceeds "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
			return nil, false
		}
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "read body: "+err.Error())
		return nil, false
	}
	return body, true
}

// emitFailed maps an engine error to a response.
func (a *API) emitFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, engine.ErrThrottled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, engine.ErrUnknownOutcome):
		a.unavailable(w, r, err)
	case errors.Is(err, engine.ErrPayloadTooLarge), errors.Is(err, engine.ErrWritesTooLarge), errors.Is(err, engine.ErrInvalidPayload):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
	case errors.Is(err, context.Canceled):
		a.log.Info("request cancelled", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "request cancelled")
	default:
		a.internal(w, r, err)
	}
}

func (a *API) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	a.log.Warn("request failed, retryable", "path", r.URL.Path, "err", err)
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "temporarily unavailable; retry")
}

func (a *API) internal(w http.ResponseWriter, r *http.Request, err error) {
	a.log.Error("request failed", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, CodeInternal, "internal error")
}
