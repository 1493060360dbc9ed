package engine

// QueueLen returns how many emits wait in tenant's queue (not yet in a
// group), so tests can line emits up behind a blocked transaction.
func (e *Engine) QueueLen(tenant string) int {
	tl := e.log(tenant)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.queue)
}

// TrackedTenants is how many tenants the engine holds state for.
func (e *Engine) TrackedTenants() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.tenants)
}
