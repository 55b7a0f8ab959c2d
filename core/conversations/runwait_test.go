package conversations

import "testing"

// TestRunWatch: a change wakes the run's waiters only, never blocks on a waiter that has not
// taken the last word, and a waiter that stopped is gone; Close is for every waiter at once.
func TestRunWatch(t *testing.T) {
	w := NewRunWatch(nil)
	a, stopA := w.watch("a")
	b, stopB := w.watch("b")
	if w.Waiting("a") != 1 || w.Waiting("b") != 1 {
		t.Fatalf("waiting a=%d b=%d", w.Waiting("a"), w.Waiting("b"))
	}
	w.RunChanged("a")
	w.RunChanged("a") // the first word is not taken yet: this one must not block
	select {
	case <-a:
	default:
		t.Fatal("a change did not wake its waiter")
	}
	select {
	case <-b:
		t.Fatal("a change woke another run's waiter")
	default:
	}
	stopA()
	stopB()
	if w.Waiting("a") != 0 || len(w.waiters) != 0 {
		t.Fatalf("stopped waiters remain: %v", w.waiters)
	}
	w.Close()
	w.Close()
	select {
	case <-w.closed:
	default:
		t.Fatal("Close did not close")
	}
}
