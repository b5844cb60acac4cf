//! Lists of fires: [`Schedule::fires_between`] and [`Schedule::preview`], both stepping
//! [`Schedule::next_after`] from the previous fire. The explained preview of a business-calendar
//! schedule is in `rolled`.

use chrono::{DateTime, Utc};

use crate::schedule::Schedule;

impl Schedule {
    /// Every fire in `(after_exclusive, until_inclusive]`, ascending, at most `cap` of them.
    pub fn fires_between(
        &self,
        after_exclusive: DateTime<Utc>,
        until_inclusive: DateTime<Utc>,
        cap: usize,
    ) -> Vec<DateTime<Utc>> {
        let mut out = Vec::new();
        let mut cursor = after_exclusive;
        while out.len() < cap {
            match self.next_after(cursor) {
                Some(f) if f <= until_inclusive => {
                    out.push(f);
                    cursor = f;
                }
                _ => break,
            }
        }
        out
    }

    /// The next `count` fires strictly after `after`, ascending (fewer if the schedule ends).
    pub fn preview(&self, after: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(count.min(1024));
        let mut cursor = after;
        while out.len() < count {
            match self.next_after(cursor) {
                Some(f) => {
                    out.push(f);
                    cursor = f;
                }
                None => break,
            }
        }
        out
    }
}
