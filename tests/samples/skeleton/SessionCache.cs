// Copyright (c) Example. MIT license.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace Example.Sessions.Caching
{
    /// <summary>
    /// How an entry left the cache.
    /// </summary>
    public enum EvictionReason
    {
        Expired,
        Capacity,
        Removed = 10,
    }

    /// <summary>Something that can be cached.</summary>
    public interface ICacheable<out TKey>
    {
        TKey Key { get; }
        long SizeInBytes();
    }

    /// <summary>
    /// A thread-safe cache of session summaries, bounded by total size.
    /// </summary>
    /// <typeparam name="TKey">The session key.</typeparam>
    [Serializable]
    public sealed class SessionCache<TKey, TValue> : IDisposable
        where TKey : notnull
        where TValue : class, ICacheable<TKey>
    {
        public const long DefaultBudget = 64 * 1024 * 1024;
        private static readonly TimeSpan SweepInterval = TimeSpan.FromMinutes(1);

        private readonly ConcurrentDictionary<TKey, TValue> _entries = new();
        private readonly Timer _sweeper;
        private long _size;

        public event EventHandler<EvictionReason>? Evicted;

        public long Budget { get; init; } = DefaultBudget;
        public int Count => _entries.Count;
        public long Size
        {
            get { return Interlocked.Read(ref _size); }
            private set { Interlocked.Exchange(ref _size, value); }
        }

        public SessionCache(long budget = DefaultBudget)
        {
            Budget = budget;
            _sweeper = new Timer(_ => Sweep(), null, SweepInterval, SweepInterval);
        }

        /// <summary>Adds or replaces the value for its key.</summary>
        public bool Put(TValue value)
        {
            if (value.SizeInBytes() > Budget)
            {
                return false;
            }
            _entries[value.Key] = value;
            Interlocked.Add(ref _size, value.SizeInBytes());
            return true;
        }

        public bool TryGet(TKey key, out TValue? value) => _entries.TryGetValue(key, out value);

        [Obsolete("Use RemoveAsync")]
        public void Remove(TKey key)
        {
            if (_entries.TryRemove(key, out var removed))
            {
                Interlocked.Add(ref _size, -removed.SizeInBytes());
                Evicted?.Invoke(this, EvictionReason.Removed);
            }
        }

        public async Task<int> RemoveAsync(IEnumerable<TKey> keys, CancellationToken cancellationToken = default)
        {
            var removed = 0;
            foreach (var key in keys)
            {
                cancellationToken.ThrowIfCancellationRequested();
                await Task.Yield();
                Remove(key);
                removed++;
            }
            return removed;
        }

        private void Sweep() => Evicted?.Invoke(this, EvictionReason.Expired);

        public void Dispose() => _sweeper.Dispose();

        private readonly record struct Stat(long Hits, long Misses);
    }
}
