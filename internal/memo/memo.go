package memo

import "sync"

// Map remembers up to Max values by key; safe for concurrent use. The zero Map remembers
// nothing until Max is set.
type Map[K comparable, V any] struct {
	// Max bounds the entries: putting one into a full Map empties it first.
	Max int

	mu sync.RWMutex
	m  map[K]V
}

// Get answers the value remembered for k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.m[k]
	return v, ok
}

// Put remembers v for k.
func (m *Map[K, V]) Put(k K, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Max <= 0 {
		return
	}
	if m.m == nil || len(m.m) >= m.Max {
		m.m = make(map[K]V)
	}
	m.m[k] = v
}

// Delete forgets k.
func (m *Map[K, V]) Delete(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, k)
}

// Len is the number of entries remembered.
func (m *Map[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}
