package cards

import (
	"container/list"
	"net/http"
)

// Bounds of a Fetcher's cache when its fields are zero: a worker that is
// handed many card URLs (every start may name another) keeps the most
// recently used ones only.
const (
	// DefaultCacheEntries is Fetcher.MaxCacheEntries when unset: cards and
	// JWK Sets kept.
	DefaultCacheEntries = 1024
	// DefaultCacheBytes is Fetcher.MaxCacheBytes when unset (64 MiB of
	// bodies, each counted twice: the body and the parsed card).
	DefaultCacheBytes = 64 << 20
	// DefaultClients is Fetcher.MaxClients when unset: guarded HTTP
	// clients kept (one per origin, header timeout and TLS config).
	DefaultClients = 256
)

// lru is a map whose least recently used entries go first when it holds
// more than max entries or, with a size, more than maxBytes. Not safe for
// concurrent use (the Fetcher's mutex guards it); the zero value is empty
// and unbounded until limits are given.
type lru[V any] struct {
	items map[string]*list.Element
	order list.List // front: most recently used
	bytes int64
	// evicted, when set, is called with each value that goes.
	evicted func(V)
}

type lruItem[V any] struct {
	key  string
	val  V
	size int64
}

func (l *lru[V]) get(key string) (V, bool) {
	if e, ok := l.items[key]; ok {
		l.order.MoveToFront(e)
		return e.Value.(*lruItem[V]).val, true
	}
	var zero V
	return zero, false
}

// put adds or replaces key, then evicts down to max entries and maxBytes
// (0: no bound of that kind).
func (l *lru[V]) put(key string, val V, size int64, max int, maxBytes int64) {
	if l.items == nil {
		l.items = map[string]*list.Element{}
	}
	if e, ok := l.items[key]; ok {
		it := e.Value.(*lruItem[V])
		l.bytes += size - it.size
		it.val, it.size = val, size
		l.order.MoveToFront(e)
	} else {
		l.items[key] = l.order.PushFront(&lruItem[V]{key: key, val: val, size: size})
		l.bytes += size
	}
	for l.order.Len() > 1 && ((max > 0 && l.order.Len() > max) || (maxBytes > 0 && l.bytes > maxBytes)) {
		back := l.order.Back()
		it := back.Value.(*lruItem[V])
		l.order.Remove(back)
		delete(l.items, it.key)
		l.bytes -= it.size
		if l.evicted != nil {
			l.evicted(it.val)
		}
	}
}

// resize changes the size counted for key (a card parsed after its body
// was kept).
func (l *lru[V]) resize(key string, size int64, max int, maxBytes int64) {
	if e, ok := l.items[key]; ok {
		it := e.Value.(*lruItem[V])
		l.put(key, it.val, size, max, maxBytes)
	}
}

func (l *lru[V]) len() int { return l.order.Len() }

// closeIdle releases an evicted client's idle connections (a call still
// using it goes on: the client stays valid for whoever holds it).
func closeIdle(c *http.Client) { c.CloseIdleConnections() }
