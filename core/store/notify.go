package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
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
	if _, err := tx.Exec(ctx, `SELECT pg_notify(?, ?)`, channel, payload); err != nil {
		return fmt.Errorf("store: notify %s: %w", channel, err)
	}
	return nil
}

// SubscriptionHandler receives what a subscription hears. Its methods are called from one
// goroutine, never concurrently with each other, and must not subscribe to the store or stop a
// subscription.
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
// being listened to; stop ends this subscription. All of a store's subscriptions, to every
// channel, share one dedicated connection that reconnects by itself (sharedListener): PostgreSQL
// (through version 17) signals every backend listening in the database on each NOTIFY, whatever
// its channel, and each one wakes to read the notification queue: every further listening
// connection costs the server some 50 µs of CPU per NOTIFY (measured). On SQLite there is
// nobody else to hear from: h.Live is called at once and stop does nothing.
func (s *Store) Subscribe(ctx context.Context, channel string, h SubscriptionHandler) (stop func(), err error) {
	if s.dialect != Postgres {
		h.Live()
		return func() {}, nil
	}
	s.listenMu.Lock()
	if s.listener == nil {
		s.listener = s.openListener()
	}
	l := s.listener
	c := l.channels[channel]
	if c == nil {
		c = &listenedChannel{listening: make(chan struct{})}
		l.mu.Lock()
		l.channels[channel] = c
		l.mu.Unlock()
		go s.listen(l, channel, c)
	}
	c.waiting++
	s.listenMu.Unlock()

	select {
	case <-c.listening:
		err = c.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.listenMu.Lock()
	c.waiting--
	if err != nil {
		last := s.release(l, channel, c)
		s.listenMu.Unlock()
		if last {
			l.close()
		}
		return nil, fmt.Errorf("store: listen %s: %w", channel, err)
	}
	sub := &subscriber{h: h}
	l.mu.Lock()
	c.subs = append(c.subs, sub)
	if l.live {
		h.Live()
	}
	l.mu.Unlock()
	s.listenMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.listenMu.Lock()
			l.mu.Lock()
			c.subs = slices.DeleteFunc(c.subs, func(x *subscriber) bool { return x == sub })
			l.mu.Unlock()
			last := s.release(l, channel, c)
			s.listenMu.Unlock()
			if last {
				l.close()
			}
		})
	}, nil
}

// sharedListener is a store's listening connection and the subscriptions it serves, by channel.
// Its goroutine calls the handlers one at a time, under mu, so that no handler is ever called
// concurrently with itself (SubscriptionHandler). Store.listenMu guards which channels it
// listens to; changes to channels and their subs are made under mu as well, for the goroutine.
type sharedListener struct {
	conn     *pq.Listener
	mu       sync.Mutex
	channels map[string]*listenedChannel
	live     bool
	close    func()
}

// listenedChannel is one channel of a sharedListener. Its first Subscribe starts Listen, which
// closes listening once it returns, with its error in err; waiting counts the Subscribe calls
// still waiting for it. Until listening is closed the channel stays in the map, so that Listen
// is never called twice for it, even when every caller waiting for it has given up.
type listenedChannel struct {
	subs      []*subscriber
	listening chan struct{}
	err       error
	waiting   int
}

type subscriber struct{ h SubscriptionHandler }

// each records whether the connection is listening, for subscriptions that join later, and calls
// f on every subscription's handler, on every channel.
func (l *sharedListener) each(live bool, f func(SubscriptionHandler)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live = live
	for _, c := range l.channels {
		for _, sub := range c.subs {
			f(sub.h)
		}
	}
}

// notified hands a notification to the subscriptions of its channel.
func (l *sharedListener) notified(n *pq.Notification) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.channels[n.Channel]; c != nil {
		for _, sub := range c.subs {
			sub.h.Notified(n.Extra)
		}
	}
}

// listen runs Listen for a channel's first Subscribe and records the outcome; when nobody waits
// for it any more (their ctx ended first), release undoes it.
func (s *Store) listen(l *sharedListener, channel string, c *listenedChannel) {
	err := l.conn.Listen(channel)
	if errors.Is(err, pq.ErrChannelAlreadyOpen) {
		err = nil // an Unlisten the server refused left it listened to
	}
	s.listenMu.Lock()
	c.err = err
	close(c.listening)
	last := s.release(l, channel, c)
	s.listenMu.Unlock()
	if last {
		l.close()
	}
}

// release forgets channel once nobody subscribes to it or waits for it and its Listen has
// returned, unlistening it. When that leaves the connection without a channel, it detaches the
// connection from the store and reports it, for the caller to close once it has released
// listenMu, which it holds.
func (s *Store) release(l *sharedListener, channel string, c *listenedChannel) (last bool) {
	if len(c.subs) > 0 || c.waiting > 0 {
		return false
	}
	select {
	case <-c.listening:
	default:
		return false // listen releases it when Listen returns
	}
	l.mu.Lock()
	delete(l.channels, channel)
	last = len(l.channels) == 0
	l.mu.Unlock()
	if last {
		s.listener = nil
	} else if c.err == nil {
		_ = l.conn.Unlisten(channel)
	}
	return last
}

// openListener opens the store's listening connection, on no channel yet, and starts the
// goroutine that hands out what it hears. It starts live: no subscription joins before the
// connection first comes up, since Listen waits for it.
func (s *Store) openListener() *sharedListener {
	events := make(chan pq.ListenerEventType, 16)
	quit := make(chan struct{})
	conn := pq.NewListener(s.dsn, listenerMinReconnect, listenerMaxReconnect, func(ev pq.ListenerEventType, _ error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventReconnected:
			select {
			case events <- ev:
			case <-quit:
			}
		}
	})
	l := &sharedListener{conn: conn, channels: map[string]*listenedChannel{}, live: true}
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
					l.each(false, SubscriptionHandler.Lost)
				} else {
					l.each(true, SubscriptionHandler.Live)
				}
			case n, ok := <-conn.Notify:
				if !ok {
					return
				}
				if n == nil {
					// The listener reconnected and may have missed notifications meanwhile.
					l.each(true, SubscriptionHandler.Live)
					continue
				}
				l.notified(n)
			case <-ping.C:
				go func() { _ = conn.Ping() }()
			}
		}
	}()
	l.close = func() {
		close(quit)
		_ = conn.Close()
		wg.Wait()
	}
	return l
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
