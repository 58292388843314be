// Package cache implements a sharded, TTL-aware in-memory cache used by the
// session index. Entries expire lazily on read and eagerly in a janitor loop.
package cache

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"
)

// ErrNotFound is returned when a key is missing or expired.
var ErrNotFound = errors.New("cache: not found")

const (
	// DefaultShards is the shard count used by New.
	DefaultShards = 16
	defaultTTL    = 5 * time.Minute
)

// Clock abstracts time so tests can control expiry.
type Clock interface {
	Now() time.Time
	// After fires once the duration has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Entry is a cached value and its deadline.
type Entry[V any] struct {
	Value    V
	Deadline time.Time
}

type shard[K comparable, V any] struct {
	mu    sync.RWMutex
	items map[K]Entry[V]
}

// Cache is a sharded map with per-entry expiry.
type Cache[K comparable, V any] struct {
	shards []*shard[K, V]
	clock  Clock
	ttl    time.Duration
	hash   func(K) uint32
}

// Option configures a Cache.
type Option[K comparable, V any] func(*Cache[K, V])

// WithTTL overrides the default time to live.
func WithTTL[K comparable, V any](ttl time.Duration) Option[K, V] {
	return func(c *Cache[K, V]) { c.ttl = ttl }
}

// New builds a cache with DefaultShards shards.
func New[K comparable, V any](hash func(K) uint32, opts ...Option[K, V]) *Cache[K, V] {
	c := &Cache[K, V]{clock: systemClock{}, ttl: defaultTTL, hash: hash}
	for i := 0; i < DefaultShards; i++ {
		c.shards = append(c.shards, &shard[K, V]{items: make(map[K]Entry[V])})
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

func (c *Cache[K, V]) shardFor(key K) *shard[K, V] {
	return c.shards[c.hash(key)%uint32(len(c.shards))]
}

// Get returns the value for key, or ErrNotFound when absent or expired.
func (c *Cache[K, V]) Get(key K) (V, error) {
	s := c.shardFor(key)
	s.mu.RLock()
	entry, ok := s.items[key]
	s.mu.RUnlock()
	if !ok || c.clock.Now().After(entry.Deadline) {
		var zero V
		return zero, ErrNotFound
	}
	return entry.Value, nil
}

// Set stores value under key until the TTL elapses.
func (c *Cache[K, V]) Set(key K, value V) {
	s := c.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[key] = Entry[V]{Value: value, Deadline: c.clock.Now().Add(c.ttl)}
}

// Janitor removes expired entries until ctx is cancelled.
func (c *Cache[K, V]) Janitor(ctx context.Context, every time.Duration) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.clock.After(every):
			now := c.clock.Now()
			for _, s := range c.shards {
				s.mu.Lock()
				for k, e := range s.items {
					if now.After(e.Deadline) {
						delete(s.items, k)
					}
				}
				s.mu.Unlock()
			}
		}
	}
}

// StringHash is an FNV-1a hash for string keys.
func StringHash(key string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return h.Sum32()
}
