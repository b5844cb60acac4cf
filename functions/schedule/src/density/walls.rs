//! [`Walls`]: the wall times of cron expressions as a periodic set, "these times of day, every
//! day", in local seconds (a naive local time counted like a Unix timestamp).

use crate::expr::TimesOfDay;

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;

/// Times of day (seconds since local midnight), sorted, distinct, not empty.
pub(super) struct Walls {
    tod: Vec<i64>,
}

impl Walls {
    /// The union of the times of day of `exprs`; `None` when there is none.
    pub(super) fn of<'a>(exprs: impl Iterator<Item = &'a TimesOfDay>) -> Option<Walls> {
        let mut day = vec![false; DAY as usize];
        for t in exprs {
            for h in &t.hours {
                for m in &t.mins {
                    for s in &t.secs {
                        day[(h * 3_600 + m * 60 + s) as usize] = true;
                    }
                }
            }
        }
        let tod: Vec<i64> = (0..DAY).filter(|s| day[*s as usize]).collect();
        (!tod.is_empty()).then_some(Walls { tod })
    }

    /// The first wall time at or after `x`.
    pub(super) fn succ(&self, x: i64) -> i64 {
        let (d, r) = (x.div_euclid(DAY), x.rem_euclid(DAY));
        match self.tod.get(self.tod.partition_point(|v| *v < r)) {
            Some(v) => d * DAY + v,
            None => (d + 1) * DAY + self.tod[0],
        }
    }

    /// The last wall time strictly before `x`.
    pub(super) fn pred(&self, x: i64) -> i64 {
        let (d, r) = (x.div_euclid(DAY), x.rem_euclid(DAY));
        match self.tod.partition_point(|v| *v < r) {
            0 => (d - 1) * DAY + self.tod[self.tod.len() - 1],
            k => d * DAY + self.tod[k - 1],
        }
    }

    /// The wall times in `[lo, hi)`, ascending.
    pub(super) fn between(&self, lo: i64, hi: i64) -> impl Iterator<Item = i64> + '_ {
        std::iter::successors(Some(self.succ(lo)), move |w| Some(self.succ(w + 1)))
            .take_while(move |w| *w < hi)
    }

    /// The most wall times in any `[x, x + 3600)`: a window over the day and the next.
    pub(super) fn peak(&self) -> u32 {
        let n = self.tod.len();
        let at = |i: usize| if i < n { self.tod[i] } else { self.tod[i - n] + DAY };
        let mut best = 0usize;
        let mut hi = 0usize;
        for lo in 0..n {
            while hi < lo + n && at(hi) - at(lo) < HOUR {
                hi += 1;
            }
            best = best.max(hi - lo);
        }
        best as u32
    }

    /// The shortest gap between two consecutive wall times, across midnight included.
    pub(super) fn gap(&self) -> i64 {
        let wrap = self.tod[0] + DAY - self.tod[self.tod.len() - 1];
        self.tod.windows(2).map(|w| w[1] - w[0]).fold(wrap, i64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walls(secs: &[u32], mins: &[u32], hours: &[u32]) -> Walls {
        let t = TimesOfDay { secs: secs.to_vec(), mins: mins.to_vec(), hours: hours.to_vec() };
        Walls::of(std::iter::once(&t)).unwrap_or_else(|| panic!("empty"))
    }

    #[test]
    fn peak_is_seconds_times_minutes_and_gap_crosses_midnight() {
        let all: Vec<u32> = (0..60).collect();
        let hours: Vec<u32> = (0..24).collect();
        assert_eq!(walls(&all, &all, &hours).peak(), 3_600);
        assert_eq!(walls(&[0], &all, &[3]).peak(), 60);
        assert_eq!(walls(&[0, 30], &[0, 15], &[9, 17]).peak(), 4);
        // 23:59:59 then 00:00:00.
        assert_eq!(walls(&[0, 59], &[0, 59], &[0, 23]).gap(), 1);
        // 09:00 daily: a day.
        assert_eq!(walls(&[0], &[0], &[9]).gap(), 86_400);
        // 10, 20, 50: 10 s apart within a minute, 20 s across it.
        assert_eq!(walls(&[10, 20, 50], &[5], &[1]).gap(), 10);
        assert_eq!(walls(&[10, 50], &[5, 6], &[1]).gap(), 20);
    }

    #[test]
    fn succ_pred_and_between() {
        let w = walls(&[0], &[0, 30], &[9]);
        let day = 20_000 * DAY;
        assert_eq!(w.succ(day + 9 * HOUR), day + 9 * HOUR);
        assert_eq!(w.succ(day + 9 * HOUR + 1), day + 9 * HOUR + 1_800);
        assert_eq!(w.succ(day + 10 * HOUR), day + DAY + 9 * HOUR);
        assert_eq!(w.pred(day + 9 * HOUR), day - DAY + 9 * HOUR + 1_800);
        assert_eq!(w.between(day, day + DAY).count(), 2);
    }
}
