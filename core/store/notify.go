package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Listener reconnection bounds: a dropped connection is retried quickly first, then no more
// often than every ten seconds, so a restarting database is not hammered by every instance.
const (
	listenerMinReconnect = 100 * time.Millisecond
	listenerMaxReconnect = 10 * time.Second
)

// listenerPingInterval is how often a listening connection is probed. A connection that died
// without a FIN is otherwise only noticed when the kernel gives up on it, minutes later; a probe
// surfaces it as a disconnection, which subscribers treat as possibly lost notifications.
const listenerPingInterval = 15 * time.Second

// Channel scopes a notification channel name to this store: on PostgreSQL, databases that share
// a server in separate schemas (tests, several deployments) must not hear each other. On SQLite
// the name is returned unchanged.
func (s *Store) Channel(base string) string {
	if s.dialect != Postgres {
		return base
	}
	return base + "_" + s.channelSuffix
}

// channelSuffixOf derives a short identifier-safe suffix from a schema name.
func channelSuffixOf(schema string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(schema))
	return fmt.Sprintf("%016x", h.Sum64())
}

// Notify sends payload on channel when tx commits: PostgreSQL delivers NOTIFY only on commit, so a
// listener never hears of a change that was rolled back. On SQLite, where one process serves the
// store, it does nothing.
func Notify(ctx context.Context, tx *Tx, channel, payload string) error {
	if tx.Dialect() != Postgres {
		return nil
	}
	if tx.Planning() {
		// A planned write's statement sends it (plan.go).
		tx.plan.channels = append(tx.plan.channels, channel)
		tx.plan.payloads = append(tx.plan.payloads, payload)
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify(?, ?)`, channel, payload); err != nil {
		return fmt.Errorf("store: notify %s: %w", channel, err)
	}
	return nil
}

// SubscriptionHandler receives what a subscription hears. Its methods are called from one
// goroutine, never concurrently with each other.
type SubscriptionHandler interface {
	// Notified receives one payload.
	Notified(payload string)
	// Live says that from now on every notification arrives: anything sent before may have been
	// missed. It is called once listening starts and again after every reconnection.
	Live()
	// Lost says that notifications may be missed from now until the next Live.
	Lost()
}

// Subscribe listens on a notification channel (PostgreSQL) and returns once the channel is
// being listened to; stop ends this subscription. Every subscription of a store to one channel
// shares one dedicated connection that reconnects by itself (sharedListener): PostgreSQL
// delivers each notification once per listening connection, and the run engine and the push hub
// both listen on the wake-up channel. On SQLite there is nobody else to hear from: h.Live is
// called at once and stop does nothing.
func (s *Store) Subscribe(ctx context.Context, channel string, h SubscriptionHandler) (stop func(), err error) {
	if s.dialect != Postgres {
		h.Live()
		return func() {}, nil
	}
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	l := s.listeners[channel]
	if l == nil {
		if l, err = s.listen(ctx, channel); err != nil {
			return nil, err
		}
		if s.listeners == nil {
			s.listeners = map[string]*sharedListener{}
		}
		s.listeners[channel] = l
	}
	sub := &subscriber{h: h}
	l.mu.Lock()
	l.subs = append(l.subs, sub)
	if l.live {
		h.Live()
	}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.listenMu.Lock()
			l.mu.Lock()
			for i, x := range l.subs {
				if x == sub {
					l.subs = append(l.subs[:i], l.subs[i+1:]...)
					break
				}
			}
			last := len(l.subs) == 0
			l.mu.Unlock()
			if last {
				delete(s.listeners, channel)
			}
			s.listenMu.Unlock()
			if last {
				l.close()
			}
		})
	}, nil
}

// sharedListener is a store's listening connection on one channel and the subscriptions it
// serves. Its goroutine calls the handlers one at a time, under mu, so that no handler is ever
// called concurrently with itself (SubscriptionHandler).
type sharedListener struct {
	mu    sync.Mutex
	subs  []*subscriber
	live  bool
	close func()
}

type subscriber struct{ h SubscriptionHandler }

// each calls f on every subscription's handler; a non-nil live first records whether the
// connection is listening, for subscriptions that join later.
func (l *sharedListener) each(live *bool, f func(SubscriptionHandler)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if live != nil {
		l.live = *live
	}
	for _, sub := range l.subs {
		f(sub.h)
	}
}

// listen opens a listening connection on channel and starts its goroutine; it returns once the
// channel is being listened to.
func (s *Store) listen(ctx context.Context, channel string) (*sharedListener, error) {
	events := make(chan pq.ListenerEventType, 16)
	quit := make(chan struct{})
	l := pq.NewListener(s.dsn, listenerMinReconnect, listenerMaxReconnect, func(ev pq.ListenerEventType, _ error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventReconnected:
			select {
			case events <- ev:
			case <-quit:
			}
		}
	})
	listened := make(chan error, 1)
	go func() { listened <- l.Listen(channel) }()
	select {
	case err := <-listened:
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("store: listen %s: %w", channel, err)
		}
	case <-ctx.Done():
		_ = l.Close()
		return nil, fmt.Errorf("store: listen %s: %w", channel, ctx.Err())
	}
	shared := &sharedListener{live: true}
	yes, no := true, false
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ping := time.NewTicker(listenerPingInterval)
		defer ping.Stop()
		for {
			select {
			case <-quit:
				return
			case ev := <-events:
				if ev == pq.ListenerEventDisconnected {
					shared.each(&no, SubscriptionHandler.Lost)
				} else {
					shared.each(&yes, SubscriptionHandler.Live)
				}
			case n, ok := <-l.Notify:
				if !ok {
					return
				}
				if n == nil {
					// The listener reconnected and may have missed notifications meanwhile.
					shared.each(&yes, SubscriptionHandler.Live)
					continue
				}
				shared.each(nil, func(h SubscriptionHandler) { h.Notified(n.Extra) })
			case <-ping.C:
				go func() { _ = l.Ping() }()
			}
		}
	}()
	shared.close = func() {
		close(quit)
		_ = l.Close()
		wg.Wait()
	}
	return shared, nil
}

// NotifyNow sends payload on channel at once, outside any transaction: for a signal about
// changes already committed. On SQLite it does nothing.
func (s *Store) NotifyNow(ctx context.Context, channel, payload string) error {
	if s.dialect != Postgres {
		return nil
	}
	if _, err := s.writer.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("store: notify %s: %w", channel, err)
	}
	return nil
}
