//! A bounded ring buffer with a blocking reader, used by the event pump.
//!
//! The buffer overwrites the oldest entry when full, so a slow reader loses
//! events instead of stalling the writer.

use std::collections::VecDeque;
use std::fmt::{self, Display};
use std::sync::{Arc, Condvar, Mutex};

/// Default capacity when none is configured.
pub const DEFAULT_CAPACITY: usize = 1024;

static GLOBAL_NAME: &str = "pump";

/// Errors the buffer reports to callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferError {
    /// The buffer was closed while waiting.
    Closed,
    /// The requested capacity was zero.
    ZeroCapacity { requested: usize },
}

impl Display for BufferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BufferError::Closed => write!(f, "buffer closed"),
            BufferError::ZeroCapacity { requested } => {
                write!(f, "capacity must be positive, got {requested}")
            }
        }
    }
}

/// Something that can be stored in the buffer.
pub trait Entry: Send + 'static {
    /// A short label used in debug output.
    fn label(&self) -> String;

    /// Size in bytes, for accounting.
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

pub type Shared<T> = Arc<Mutex<RingBuffer<T>>>;

/// A fixed-capacity FIFO that drops the oldest entry on overflow.
#[derive(Debug)]
pub struct RingBuffer<T: Entry> {
    items: VecDeque<T>,
    capacity: usize,
    dropped: u64,
    closed: bool,
}

impl<T: Entry> RingBuffer<T> {
    /// Creates an empty buffer holding at most `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Result<Self, BufferError> {
        if capacity == 0 {
            return Err(BufferError::ZeroCapacity { requested: capacity });
        }
        Ok(Self { items: VecDeque::with_capacity(capacity), capacity, dropped: 0, closed: false })
    }

    /// Appends an entry, evicting the oldest one when full.
    pub fn push(&mut self, item: T) -> Option<T> {
        let evicted = if self.items.len() == self.capacity {
            self.dropped += 1;
            self.items.pop_front()
        } else {
            None
        };
        self.items.push_back(item);
        evicted
    }

    pub(crate) fn drain_labels<'a>(&'a mut self) -> impl Iterator<Item = String> + 'a {
        self.items.drain(..).map(|entry| entry.label())
    }

    #[inline]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Blocks until an entry is available or the buffer is closed.
pub fn pop_blocking<T: Entry>(shared: &Shared<T>, signal: &Condvar) -> Result<T, BufferError>
where
    T: Clone,
{
    let mut guard = shared.lock().expect("poisoned ring buffer");
    loop {
        if let Some(item) = guard.items.pop_front() {
            return Ok(item);
        }
        if guard.closed {
            return Err(BufferError::Closed);
        }
        guard = signal.wait(guard).expect("poisoned while waiting");
    }
}

macro_rules! impl_entry_for {
    ($($t:ty),*) => {
        $(impl Entry for $t {
            fn label(&self) -> String { format!("{:?}", self) }
        })*
    };
}

impl_entry_for!(u32, u64, String);

pub mod stats {
    //! Counters exported to the metrics endpoint.

    /// A snapshot of buffer health.
    #[derive(Default, Clone, Copy)]
    pub struct Snapshot {
        pub len: usize,
        pub dropped: u64,
    }

    pub fn ratio(s: &Snapshot) -> f64 {
        let total = s.len as f64 + s.dropped as f64;
        if total == 0.0 { 0.0 } else { s.dropped as f64 / total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_when_full() {
        let mut buf = RingBuffer::with_capacity(2).unwrap();
        buf.push(1u32);
        buf.push(2u32);
        assert_eq!(buf.push(3u32), Some(1));
    }
}
