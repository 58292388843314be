# frozen_string_literal: true

require "json"
require "time"
require_relative "errors"

# Stores agent sessions as append-only event logs on disk.
module SessionStore
  VERSION = "0.3.1"
  DEFAULT_ROOT = File.expand_path("~/.sessions")

  # One immutable event of a session.
  Event = Struct.new(:kind, :payload, :at, keyword_init: true) do
    def to_h
      { kind: kind, payload: payload, at: at.iso8601 }
    end
  end

  # A session: an id and its events, appended in order.
  class Session
    include Enumerable
    extend Forwardable

    attr_reader :id, :events
    def_delegators :@events, :size, :empty?

    MAX_EVENTS = 10_000

    def initialize(id, events: [])
      raise ArgumentError, "id must not be blank" if id.to_s.strip.empty?

      @id = id
      @events = events.dup
    end

    # Yields every event, oldest first.
    def each(&block)
      @events.each(&block)
    end

    def append(kind, payload = {})
      event = Event.new(kind: kind, payload: payload, at: Time.now.utc)
      @events.shift while @events.size >= MAX_EVENTS
      @events << event
      event
    end

    def self.load(path) = new(File.basename(path, ".jsonl"), events: read_events(path))

    class << self
      def read_events(path)
        File.foreach(path).map { |line| Event.new(**JSON.parse(line, symbolize_names: true)) }
      end
    end

    private

    def last_event_at
      @events.last&.at
    end
  end

  # Writes sessions under a root directory.
  class Writer
    def initialize(root = DEFAULT_ROOT)
      @root = root
    end

    def write(session)
      path = File.join(@root, "#{session.id}.jsonl")
      File.open(path, "a") { |f| session.each { |e| f.puts(JSON.generate(e.to_h)) } }
      path
    end
  end
end
