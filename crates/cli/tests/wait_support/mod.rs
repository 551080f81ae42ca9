//! Waiting for text that a test's own thread copies from a child's pipe (its stderr): a line
//! the child wrote before its answer may reach the test's copy after the answer does.

use std::thread;
use std::time::{Duration, Instant};

/// What `read` returns, once it holds `needle`, or after 10 s (what it holds then; the
/// caller's assertion says what was missing). Polls every 20 ms.
pub fn until_it_holds(read: impl Fn() -> String, needle: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = read();
        if text.contains(needle) || Instant::now() > until {
            return text;
        }
        thread::sleep(Duration::from_millis(20));
    }
}
