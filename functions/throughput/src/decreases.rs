//! DynamoDB's ration of throughput decreases.
//!
//! A table (and each of its indexes, separately) may lower its provisioned units 4 times at any
//! time of a UTC day, and once more whenever it has not decreased in the past hour: 27 a day at
//! most (4 in the first hour, then one per further hour). Increases are not rationed.

/// Decreases allowed at any time of a UTC day.
pub const DECREASES_ANY_TIME: u32 = 4;
/// Decreases allowed in one UTC day at most.
pub const DECREASES_PER_DAY: u32 = 27;
/// Seconds without a decrease that earn one more once the day's first four are spent.
pub const DECREASE_SPACING_SECS: i64 = 3_600;
const SECONDS_PER_DAY: i64 = 86_400;

/// The decreases one table or index has made: the UTC day of the last, how many that day, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Decreases {
    /// Unix day (`seconds / 86,400`) `today` counts.
    pub day: i64,
    /// Decreases made on `day`.
    pub today: u32,
    /// Unix seconds of the last decrease, if any.
    pub last_at: Option<i64>,
}

impl Decreases {
    /// What DynamoDB reports: `NumberOfDecreasesToday` and `LastDecreaseDateTime` (Unix seconds),
    /// read at `now`.
    pub fn reported(now: i64, today: u32, last_at: Option<i64>) -> Decreases {
        Decreases { day: now.div_euclid(SECONDS_PER_DAY), today, last_at }
    }

    /// Decreases made on the UTC day of `now` (a new day starts from none).
    pub fn on_day_of(&self, now: i64) -> u32 {
        if now.div_euclid(SECONDS_PER_DAY) == self.day {
            self.today
        } else {
            0
        }
    }

    /// Whether a decrease at `now` is within the ration.
    pub fn allowed(&self, now: i64) -> bool {
        let today = self.on_day_of(now);
        if today >= DECREASES_PER_DAY {
            return false;
        }
        today < DECREASES_ANY_TIME || self.last_at.is_none_or(|t| now - t >= DECREASE_SPACING_SECS)
    }

    /// The record after a decrease at `now`.
    pub fn after_decrease(&self, now: i64) -> Decreases {
        Decreases { day: now.div_euclid(SECONDS_PER_DAY), today: self.on_day_of(now) + 1, last_at: Some(now) }
    }
}
