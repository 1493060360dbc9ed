package durable

import "container/list"

// lru is a map bounded to max entries that drops the least recently used
// first, handing each dropped value to evicted. Not safe for concurrent
// use: the Consumer's lock guards it.
type lru[V any] struct {
	max     int
	order   *list.List // front: most recent; values are *lruEntry[V]
	entries map[string]*list.Element
	evicted func(V)
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int, evicted func(V)) *lru[V] {
	return &lru[V]{max: max, order: list.New(), entries: map[string]*list.Element{}, evicted: evicted}
}

// get returns key's value and marks it used.
func (l *lru[V]) get(key string) (V, bool) {
	e, ok := l.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).val, true
}

// put stores v under key, dropping the least recently used past max.
func (l *lru[V]) put(key string, v V) {
	if e, ok := l.entries[key]; ok {
		e.Value.(*lruEntry[V]).val = v
		l.order.MoveToFront(e)
		return
	}
	l.entries[key] = l.order.PushFront(&lruEntry[V]{key: key, val: v})
	for l.order.Len() > l.max {
		last := l.order.Back()
		ent := last.Value.(*lruEntry[V])
		l.order.Remove(last)
		delete(l.entries, ent.key)
		if l.evicted != nil {
			l.evicted(ent.val)
		}
	}
}

// each calls fn for every value, most recent first.
func (l *lru[V]) each(fn func(V)) {
	for e := l.order.Front(); e != nil; e = e.Next() {
		fn(e.Value.(*lruEntry[V]).val)
	}
}

// len is the number of entries.
func (l *lru[V]) len() int { return l.order.Len() }
