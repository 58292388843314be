/*
 * Copyright (c) 2024 Example Corp. Licensed under the MIT license.
 */
package com.example.sessions.index;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * An in-memory index of session events, keyed by session id.
 * <p>
 * Readers never block writers: each session's list is copied on write.
 */
@SuppressWarnings("unused")
public final class EventIndex<E extends EventIndex.Event> implements AutoCloseable {

    /** Maximum events kept per session before the oldest are dropped. */
    public static final int MAX_EVENTS = 10_000;

    private static final String LOG_PREFIX = "[event-index] ";

    private final Map<String, List<E>> bySession = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** Kinds of events the index understands. */
    public enum Kind {
        MESSAGE("message"),
        TOOL_CALL("tool_call"),
        COMPACTION("compaction");

        private final String wire;

        Kind(String wire) {
            this.wire = wire;
        }

        /** The name used on the wire. */
        public String wire() {
            return wire;
        }
    }

    /** An indexed event. */
    public interface Event {
        String sessionId();

        Kind kind();

        default Instant at() {
            return Instant.EPOCH;
        }
    }

    /** A minimal event, used in tests and by the importer. */
    public record SimpleEvent(String sessionId, Kind kind, Instant at) implements Event {
        public SimpleEvent {
            if (sessionId == null || sessionId.isBlank()) {
                throw new IllegalArgumentException("sessionId must not be blank");
            }
        }
    }

    public EventIndex() {
        this.closed = false;
    }

    /**
     * Adds an event to its session's list.
     *
     * @param event the event to add
     * @return the number of events now held for that session
     */
    @Deprecated(since = "2.1")
    public synchronized int add(final E event) throws IllegalStateException {
        if (closed) {
            throw new IllegalStateException(LOG_PREFIX + "closed");
        }
        List<E> copy = new ArrayList<>(bySession.getOrDefault(event.sessionId(), List.of()));
        copy.add(event);
        while (copy.size() > MAX_EVENTS) {
            copy.remove(0);
        }
        bySession.put(event.sessionId(), Collections.unmodifiableList(copy));
        return copy.size();
    }

    public <R> List<R> select(String sessionId, Predicate<? super E> filter,
                              java.util.function.Function<E, R> mapper) {
        List<R> out = new ArrayList<>();
        for (E e : bySession.getOrDefault(sessionId, List.of())) {
            if (filter.test(e)) {
                out.add(mapper.apply(e));
            }
        }
        return out;
    }

    public Optional<E> latest(String sessionId) {
        List<E> events = bySession.get(sessionId);
        return events == null || events.isEmpty() ? Optional.empty() : Optional.of(events.get(events.size() - 1));
    }

    @Override
    public void close() {
        closed = true;
        bySession.clear();
    }

    static final class Stats {
        int sessions;
        long events;

        @Override
        public String toString() {
            return "Stats{sessions=" + sessions + ", events=" + events + "}";
        }
    }
}
