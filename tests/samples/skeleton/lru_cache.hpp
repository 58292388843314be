// lru_cache.hpp - a header-only LRU cache with O(1) get and put.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#define LRU_CHECK(cond, msg) \
    do { if (!(cond)) throw std::invalid_argument(msg); } while (0)

namespace sessions {
namespace detail {

/// Counts hits and misses for diagnostics.
struct Counters {
    std::size_t hits = 0;
    std::size_t misses = 0;

    double hit_ratio() const noexcept {
        const auto total = hits + misses;
        return total == 0 ? 0.0 : static_cast<double>(hits) / total;
    }
};

}  // namespace detail

/// Policy invoked when an entry is evicted.
template <typename K, typename V>
using EvictionCallback = std::function<void(const K&, V&&)>;

/**
 * A least-recently-used cache.
 *
 * Not thread-safe: wrap it in a mutex when shared.
 */
template <typename K, typename V, typename Hash = std::hash<K>>
class LruCache {
public:
    using key_type = K;
    using mapped_type = V;

    explicit LruCache(std::size_t capacity, EvictionCallback<K, V> on_evict = {})
        : capacity_(capacity), on_evict_(std::move(on_evict)) {
        LRU_CHECK(capacity > 0, "capacity must be positive");
    }

    LruCache(const LruCache&) = delete;
    LruCache& operator=(const LruCache&) = delete;
    virtual ~LruCache() = default;

    /// Returns the value for `key` and marks it most recently used.
    std::optional<V> get(const K& key) {
        auto it = index_.find(key);
        if (it == index_.end()) {
            ++counters_.misses;
            return std::nullopt;
        }
        ++counters_.hits;
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
    }

    template <typename... Args>
    void emplace(const K& key, Args&&... args) {
        put(key, V(std::forward<Args>(args)...));
    }

    void put(const K& key, V value);

    [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }
    const detail::Counters& counters() const noexcept { return counters_; }

protected:
    virtual void evict_one();

private:
    using Entry = std::pair<K, V>;
    using Order = std::list<Entry>;

    std::size_t capacity_;
    Order order_;
    std::unordered_map<K, typename Order::iterator, Hash> index_;
    EvictionCallback<K, V> on_evict_;
    detail::Counters counters_;
};

template <typename K, typename V, typename Hash>
void LruCache<K, V, Hash>::put(const K& key, V value) {
    auto it = index_.find(key);
    if (it != index_.end()) {
        it->second->second = std::move(value);
        order_.splice(order_.begin(), order_, it->second);
        return;
    }
    if (index_.size() == capacity_) {
        evict_one();
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
}

template <typename K, typename V, typename Hash>
void LruCache<K, V, Hash>::evict_one() {
    auto& victim = order_.back();
    if (on_evict_) {
        on_evict_(victim.first, std::move(victim.second));
    }
    index_.erase(victim.first);
    order_.pop_back();
}

enum class Mode : unsigned char { Strict, Lenient };

inline constexpr Mode kDefaultMode = Mode::Strict;

}  // namespace sessions
