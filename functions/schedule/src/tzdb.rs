//! tz database releases and the upgrade report: what a change of zone rules does to a job's
//! next fires, instant by instant.
//!
//! A job records the release its fires were computed with ([`super::tzdb_version`], stored
//! on the job item whenever its next fire is stored). When the compiled release moves on (an
//! upgrade of `chrono-tz`), [`compare`] computes the job's next fires under both releases and
//! lists those that differ. The compiled release is [`Tzdb::compiled`]; any other release is
//! read from TZif data ([`Tzdb::from_tzif`], [`Tzdb::from_zoneinfo`]: the files `zic` writes,
//! e.g. a `/usr/share/zoneinfo` tree of that release), so the same schedule maths run on both
//! sides and only the zone rules differ.
//!
//! Fires are matched by their *local wall time* for cron and `at` schedules (the 09:00 fire is
//! the 09:00 fire under both releases, and its instant moves when the offset changes), and by
//! instant for `rate()` (whose instants do not depend on the zone, except through exclusions).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, Utc};
use chrono_tz::Tz;

use super::schedule::Kind;
use super::zone::Zone;
use super::{Schedule, ScheduleError, ScheduleSpec};

/// One tz database release: its version and where its zone rules come from.
#[derive(Debug, Clone)]
pub struct Tzdb {
    version: String,
    /// `None`: the compiled rules. Otherwise the zones read from TZif data, by IANA name.
    zones: Option<Arc<HashMap<String, jiff::tz::TimeZone>>>,
}

/// Two releases are the same when their versions and sources are (the compiled rules, or
/// the same loaded TZif data).
impl PartialEq for Tzdb {
    fn eq(&self, other: &Tzdb) -> bool {
        self.version == other.version
            && match (&self.zones, &other.zones) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}
impl Eq for Tzdb {}

/// TZif data that cannot be used. Permanent: the data must be fixed.
#[derive(Debug, thiserror::Error)]
pub enum TzdbError {
    /// A zone's bytes are not TZif.
    #[error("{zone}: not TZif data: {reason}")]
    NotTzif {
        /// The zone name given with the data.
        zone: String,
        /// What the parser said.
        reason: String,
    },
    /// A zoneinfo directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path that failed.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A zoneinfo directory holds no TZif file.
    #[error("{0}: no TZif file found")]
    Empty(String),
}

impl Tzdb {
    /// The release compiled into this build.
    pub fn compiled() -> Tzdb {
        Tzdb { version: super::tzdb_version().to_string(), zones: None }
    }

    /// A release given as TZif data per zone name (`("America/Mexico_City", bytes)`).
    pub fn from_tzif<I, N, B>(version: impl Into<String>, zones: I) -> Result<Tzdb, TzdbError>
    where
        I: IntoIterator<Item = (N, B)>,
        N: Into<String>,
        B: AsRef<[u8]>,
    {
        let mut map = HashMap::new();
        for (name, data) in zones {
            let name = name.into();
            let tz = jiff::tz::TimeZone::tzif(&name, data.as_ref())
                .map_err(|e| TzdbError::NotTzif { zone: name.clone(), reason: e.to_string() })?;
            map.insert(name, tz);
        }
        Ok(Tzdb { version: version.into(), zones: Some(Arc::new(map)) })
    }

    /// A release read from a zoneinfo tree (`zic -d DIR` output): every file under `dir` that
    /// is TZif data, named by its path below `dir` (`America/Mexico_City`). Other files
    /// (`zone.tab`, `tzdata.zi`, ...) are passed over.
    pub fn from_zoneinfo(version: impl Into<String>, dir: &Path) -> Result<Tzdb, TzdbError> {
        let mut found = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        let io = |p: &Path, source| TzdbError::Io { path: p.display().to_string(), source };
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).map_err(|e| io(&d, e))? {
                let path = entry.map_err(|e| io(&d, e))?.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let data = std::fs::read(&path).map_err(|e| io(&path, e))?;
                if !data.starts_with(b"TZif") {
                    continue;
                }
                let Ok(rel) = path.strip_prefix(dir) else { continue };
                let name = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>();
                found.push((name.join("/"), data));
            }
        }
        if found.is_empty() {
            return Err(TzdbError::Empty(dir.display().to_string()));
        }
        Tzdb::from_tzif(version, found)
    }

    /// The release's version (`"2025b"`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether these are the compiled rules.
    pub fn is_compiled(&self) -> bool {
        self.zones.is_none()
    }

    /// The rules of `tz` in this release.
    pub(crate) fn zone(&self, tz: Tz) -> Result<Zone, ScheduleError> {
        match &self.zones {
            None => Ok(Zone::Compiled(tz)),
            Some(zones) => zones.get(tz.name()).map(|z| Zone::Tzif(tz, z.clone())).ok_or_else(|| {
                ScheduleError::Timezone(format!(
                    "'{}' is not a zone of tz database {}",
                    tz.name(),
                    self.version
                ))
            }),
        }
    }
}

/// One fire that differs between two releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireChange {
    /// The fire's local wall time in the job's zone (under the old rules when it has an old
    /// instant, else under the new ones).
    pub local_time: NaiveDateTime,
    /// The instant under the old release; `None`: a fire the new rules add.
    pub old_at: Option<DateTime<Utc>>,
    /// The instant under the new release; `None`: a fire the new rules remove.
    pub new_at: Option<DateTime<Utc>>,
}

impl FireChange {
    /// `new_at - old_at` in seconds, when the fire exists under both.
    pub fn shift_secs(&self) -> Option<i64> {
        Some((self.new_at? - self.old_at?).num_seconds())
    }
}

/// The next `count` fires after `after` of a job (its spec, anchored at `anchor`) under the
/// `old` and the `new` release, and the fires that differ, in time order. Empty when the job
/// fires at the same instants under both. The window compared is the shorter of the two
/// lists' spans, so a fire that only moves past the end of one list is not reported as
/// removed.
///
/// # Errors
/// The spec does not parse under one of the releases (its zone is missing from `old`).
pub fn compare(
    spec: &ScheduleSpec,
    anchor: DateTime<Utc>,
    after: DateTime<Utc>,
    count: usize,
    old: &Tzdb,
    new: &Tzdb,
) -> Result<Vec<FireChange>, ScheduleError> {
    let old_s = Schedule::parse_in(spec, anchor, old, None)?;
    let new_s = Schedule::parse_in(spec, anchor, new, None)?;
    // Grouped by wall time unless a rate() is among the expressions (its fires move with UTC).
    let by_wall = !old_s.members().any(|m| matches!(m.kind, Kind::Rate { .. }));
    // Fires grouped by key (two under `onOverlap: both` share a wall time), and the last key a
    // list cut at `count` covers: past it nothing is known.
    let keyed = |s: &Schedule| {
        let fires = s.preview(after, count);
        let last = (fires.len() == count).then(|| fires.last().copied()).flatten();
        let key = |f: DateTime<Utc>| if by_wall { s.zone.local(f) } else { f.naive_utc() };
        let mut groups: BTreeMap<NaiveDateTime, Vec<DateTime<Utc>>> = BTreeMap::new();
        for f in fires {
            groups.entry(key(f)).or_default().push(f);
        }
        (groups, last.map(key))
    };
    let (old_g, old_last) = keyed(&old_s);
    let (new_g, new_last) = keyed(&new_s);
    let horizon = match (old_last, new_last) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let keys: BTreeSet<NaiveDateTime> =
        old_g.keys().chain(new_g.keys()).copied().filter(|k| horizon.is_none_or(|h| *k <= h)).collect();
    let mut out = Vec::new();
    for k in keys {
        let o = old_g.get(&k).map(Vec::as_slice).unwrap_or_default();
        let n = new_g.get(&k).map(Vec::as_slice).unwrap_or_default();
        // An instant present under both is unchanged; the others pair up in time order, and
        // what is left over was removed or added.
        let o: Vec<_> = o.iter().filter(|t| !n.contains(t)).copied().collect();
        let n: Vec<_> = n.iter().filter(|t| !old_g.get(&k).is_some_and(|v| v.contains(t))).copied().collect();
        for i in 0..o.len().max(n.len()) {
            out.push(FireChange { local_time: k, old_at: o.get(i).copied(), new_at: n.get(i).copied() });
        }
    }
    // For rate() the key is the UTC instant: show the local time under the old rules.
    if !by_wall {
        for c in &mut out {
            let at = c.old_at.or(c.new_at).unwrap_or_default();
            c.local_time = if c.old_at.is_some() { old_s.zone.local(at) } else { new_s.zone.local(at) };
        }
    }
    out.sort_by_key(|c| (c.old_at.or(c.new_at), c.new_at));
    Ok(out)
}

#[cfg(test)]
mod tests;
