package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/bowline-iot/bowline/engine/reconcile"
)

func (a *API) reconcile(w http.ResponseWriter, r *http.Request) {
	if !a.authOperator(w, r) {
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
	// Config is engine/reconcile's; when DLQURL is empty, DLQ resolves it
	// on the first call.
	Config reconcile.Config
	// DLQ returns the DLQ's URL (cloud/app resolves queue URLs once).
	DLQ func(ctx context.Context) (string, error)

	mu sync.Mutex
}

var _ Reconciler = (*StackReconciler)(nil)

// Reconcile builds the report.
func (s *StackReconciler) Reconcile(ctx context.Context) (reconcile.Report, error) {
	s.mu.Lock()
	if s.Config.DLQURL == "" {
		u, err := s.DLQ(ctx)
		if err != nil {
			s.mu.Unlock()
			return reconcile.Report{}, fmt.Errorf("reconcile: %w", err)
		}
		s.Config.DLQURL = u
	}
	cfg := s.Config
	s.mu.Unlock()
	return reconcile.Reconcile(ctx, cfg)
}
