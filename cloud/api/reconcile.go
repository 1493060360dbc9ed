package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/engine/reconcile"
)

func (a *API) reconcile(w http.ResponseWriter, r *http.Request) {
	if !a.isOperator(r) {
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong operator token")
		return
	}
	if a.cfg.Reconciler == nil {
		writeError(w, http.StatusNotImplemented, CodeNotConfigured, "reconcile is not configured on this api")
		return
	}
	rep, err := a.cfg.Reconciler.Reconcile(r.Context())
	if err != nil {
		a.unavailable(w, r, fmt.Errorf("reconcile: %w", err))
		return
	}
	if rep.Tenants == nil {
		rep.Tenants = []reconcile.Tenant{}
	}
	writeJSON(w, http.StatusOK, rep)
}

// StackReconciler answers /v1/ops/reconcile with engine/reconcile for one
// stack: chains, dead letters, DLQ depth, unmatched and unsettled work.
type StackReconciler struct {
	// Config is engine/reconcile's; DLQURL may be empty, then DLQName is
	// resolved on the first call.
	Config reconcile.Config
	// Queue resolves DLQName.
	Queue   QueueURL
	DLQName string

	mu sync.Mutex
}

// QueueURL resolves a queue name.
type QueueURL interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ Reconciler = (*StackReconciler)(nil)

// Reconcile builds the report.
func (s *StackReconciler) Reconcile(ctx context.Context) (reconcile.Report, error) {
	s.mu.Lock()
	if s.Config.DLQURL == "" {
		u, err := s.Queue.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(s.DLQName)})
		if err != nil {
			s.mu.Unlock()
			return reconcile.Report{}, fmt.Errorf("find queue %q: %w", s.DLQName, err)
		}
		s.Config.DLQURL = aws.ToString(u.QueueUrl)
	}
	cfg := s.Config
	s.mu.Unlock()
	return reconcile.Reconcile(ctx, cfg)
}
