//! What a job will do next, as a reader of the job wants it: its real next fire, and its
//! upcoming fires annotated with the daylight-saving transitions they cross.
//!
//! Why the stored position is not enough: an every-minute or daily job is moved into its
//! class once and then never advanced (its position is the shard watermark, README
//! "Every-minute class"), so its stored `next` stays at the fire where it entered the class.

use crate::model::{DueClass, Job, JobState};
use crate::schedule::Schedule;
use chrono::{DateTime, Duration, Utc};

/// The job's next fire not yet due at `now`: the stored trigger position, except for jobs
/// whose position is the shard watermark (every-minute and daily classes), where a stored
/// position in the past means "already fired"; for those, the schedule's first fire at or
/// after `now`. A stored position in the past of any other class is a fire still pending
/// (late), so it is shown as is. `None` when the job is not enabled or the schedule is done.
pub fn next_fire(job: &Job, schedule: Option<&Schedule>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if job.state != JobState::Enabled {
        return None;
    }
    let stored = job.next_fire_at?;
    let watermark_class = matches!(job.due_class, DueClass::Every | DueClass::Daily(_));
    if stored >= now || !watermark_class {
        return Some(stored);
    }
    match schedule {
        Some(s) => s.next_after(now - Duration::milliseconds(1)),
        None => Some(stored),
    }
}
