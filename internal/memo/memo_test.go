package memo

import (
	"sync"
	"testing"
)

// A Map answers what was put, forgets what was deleted, empties itself when a put finds it full,
// remembers nothing without a bound, and takes concurrent use.
func TestMap(t *testing.T) {
	m := Map[string, int]{Max: 2}
	m.Put("a", 1)
	m.Put("b", 2)
	if v, ok := m.Get("a"); !ok || v != 1 {
		t.Fatalf("a: %d %v", v, ok)
	}
	m.Delete("a")
	if _, ok := m.Get("a"); ok || m.Len() != 1 {
		t.Fatalf("a deleted: still there, or %d entries", m.Len())
	}
	m.Put("c", 3)
	m.Put("d", 4) // full: emptied first
	if _, ok := m.Get("b"); ok || m.Len() != 1 {
		t.Fatalf("a full map kept b, or holds %d entries", m.Len())
	}
	if v, _ := m.Get("d"); v != 4 {
		t.Fatalf("d: %d", v)
	}
	var none Map[string, int]
	none.Put("a", 1)
	if _, ok := none.Get("a"); ok {
		t.Fatal("a map without a bound remembered")
	}
	var wg sync.WaitGroup
	big := Map[int, int]{Max: 64}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				big.Put(i%100, i)
				if v, ok := big.Get(i % 100); ok && v%100 != i%100 {
					t.Errorf("key %d holds %d", i%100, v)
				}
			}
		}()
	}
	wg.Wait()
	if big.Len() > 64 {
		t.Fatalf("%d entries; bound 64", big.Len())
	}
}
